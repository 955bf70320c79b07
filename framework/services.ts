// Services are a contract (framework/contracts/services.ts, completed by contracts/composition.ts).
import type {} from './contracts/composition.ts';

export type { Services } from './contracts/services.ts';
