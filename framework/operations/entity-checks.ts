import { Compile } from 'typebox/compile';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { problem, ProgrammingError, type FieldError } from '../errors.ts';

type Values = Record<string, unknown>;

/** Where the values being written came from: a request body (after beforeWrite), a command, or afterWrite. */
export type WriteSource =
  | { kind: 'body' }
  | { kind: 'command'; command: string }
  | { kind: 'hook' }
  | { kind: 'restore' };

/** Values produced by code (a command, a hook) meet the field schemas before they are stored. */
export class ValueCheck {
  private readonly entity: ResolvedEntity;
  private readonly checkChanges: ReturnType<typeof Compile>;

  constructor(entity: ResolvedEntity) {
    this.entity = entity;
    this.checkChanges = Compile(entity.schemas.changes);
  }

  validate(values: Values, source: WriteSource | 'beforeWrite'): void {
    const candidate: Values = {};
    for (const [field, value] of Object.entries(values)) {
      if (value !== undefined) candidate[field] = value instanceof Date ? value.toISOString() : value;
    }
    if (this.checkChanges.Check(candidate)) return;
    const by =
      source === 'beforeWrite'
        ? 'beforeWrite'
        : source.kind === 'command'
          ? `command ${source.command}`
          : source.kind === 'restore'
            ? 'a restore'
            : 'afterWrite';
    // The same pointers as a refused body's: one per unknown field, one per field that fails.
    const errors: FieldError[] = [...this.checkChanges.Errors(candidate)].flatMap((e): FieldError[] => {
      const issue = e as {
        instancePath?: string;
        message?: string;
        keyword?: string;
        params?: { additionalProperties?: string[] };
      };
      if (issue.keyword === 'boolean') return [];
      if (issue.keyword === 'additionalProperties') {
        return (issue.params?.additionalProperties ?? []).map((name) => ({
          pointer: `/${name}`,
          message: `not a field: ${name}`,
        }));
      }
      return [{ pointer: issue.instancePath || '/', message: issue.message ?? 'invalid' }];
    });
    const detail = `The values ${by} of ${this.entity.names.key} would store do not match the field schemas`;
    // What a command returns is the code's doing, not the caller's: a programming error (500
    // INTERNAL, logged in full). A body reworked by the hooks, or an old revision restored, is
    // the request's: 422 at the fields.
    if (source !== 'beforeWrite' && source.kind === 'command')
      throw new ProgrammingError(`${detail}: ${errors.map((e) => `${e.pointer} ${e.message}`).join('; ')}`);
    throw problem('VALIDATION_FAILED', detail, { errors });
  }
}
