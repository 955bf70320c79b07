/**
 * access_tokens is the framework's identity table (migrations/framework/0013_identity.sql,
 * framework/contracts/database.ts); the auth module adds the name a person gave a token
 * (migrations/auth/0006_token_names.sql), for kysely's typed builder.
 */
declare module '../../framework/contracts/database.ts' {
  interface AccessTokensTable {
    name: string;
  }
}

export {};
