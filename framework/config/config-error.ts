/** Raised for any problem with the configuration; its message names the file, the key and the rule. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
