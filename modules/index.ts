import type { ModuleDefinition } from '../framework/entity/define.ts';
import { authModule } from './auth/index.ts';
import { notificationModule } from './notification/index.ts';
import { userModule } from './user/index.ts';
import { tenantModule } from './tenant/index.ts';
import { taskModule } from './task/index.ts';
import { contentModule } from './content/index.ts';
import { fileModule } from './file/index.ts';
import { billingModule } from './billing/index.ts';
import { webhookModule } from './webhook/index.ts';

/** The installation's modules, in migration order (framework migrations always run first). */
export const coreModules: readonly ModuleDefinition[] = [
  userModule,
  authModule,
  notificationModule,
  tenantModule,
  taskModule,
  billingModule,
];

export const allModules: readonly ModuleDefinition[] = [...coreModules, contentModule, fileModule, webhookModule];
