// The table types are a contract (framework/contracts/database.ts); this path stays for the framework's code.
export type { Database } from '../contracts/database.ts';
