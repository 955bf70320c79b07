// The shape of config.yaml is a contract (framework/contracts/config.ts); this path stays for the framework's code.
export * from '../contracts/config.ts';
