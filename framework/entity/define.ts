/**
 * The author API, one import for modules: what a module declares (module-definition.ts), its
 * entities (entity-definition.ts), routes (route-definition.ts), the row and value types they
 * share (entity-values.ts, field-text.ts, storage.ts), and the contracts their code is handed
 * (framework/contracts/: the transaction context, the services, the admin site, problem codes).
 * Split by responsibility; this file only gathers them, and imports no implementation
 * (test/framework/import-rules.test.ts).
 */
export * from './entity-values.ts';
export * from './entity-definition.ts';
export * from './route-definition.ts';
export * from './module-definition.ts';
export * from './field-text.ts';
export { Secret } from './secret-field.ts';
export type { TenantRef } from '../contracts/tenant.ts';
export type {
  AfterTransaction,
  PendingEvent,
  SessionInfo,
  Transactions,
  TxContext,
} from '../contracts/transaction.ts';
export type {
  HostDirectory,
  MetricSeries,
  ModuleRegistry,
  PublicReadValidators,
  Services,
} from '../contracts/services.ts';
export type { RegisteredRoute } from '../contracts/composition.ts';
export type { EntityOperationsApi, Page, PageQuery } from '../contracts/operations.ts';
export type { EntityEndpoint, EntityNames, ResolvedEntity } from '../contracts/entity.ts';
export type { Config } from '../contracts/config.ts';
export type { Database, Db } from '../contracts/database.ts';
export type { Clock } from '../contracts/clock.ts';
export type { MailMessage, Mailer } from '../contracts/mail.ts';
export type { BearerAttemptLimit } from '../contracts/access.ts';
export type {
  FieldError,
  Problem,
  ProblemCode,
  ProblemCodesOf,
  ProblemDeclaration,
  ProblemDocument,
} from '../contracts/problems.ts';
export type {
  AdminErrorRenderer,
  AdminPageContext,
  AdminPageDefinition,
  AdminPagesRegistrar,
  AdminSite,
  AdminView,
  ReadinessCheck,
  ServedSidebarEntry,
  SidebarEntry,
} from '../contracts/admin.ts';
