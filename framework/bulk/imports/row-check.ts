import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import type { FastifySchemaCompiler } from 'fastify';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import type { FieldError } from '../../errors.ts';
import { bodyFieldCheck, fieldCodeFormatter } from '../../http/register-route.ts';
import { typeboxValidatorCompiler } from '../../http/validation.ts';
import { toProblem, validationProblem, type ValidationIssue } from '../../http/problems.ts';

/** A refused row's problem as the import reports it: the create route's code, detail and pointers into the row. */
export interface RowProblem {
  code: string;
  detail: string;
  errors?: FieldError[];
}

/** The problem of a refused row, its pointers made relative to the row (/title, not /body/title). */
export function rowProblem(err: unknown): RowProblem {
  const refusal = toProblem(err);
  const document = refusal.toDocument();
  const errors = document.errors?.map((e) => ({ ...e, pointer: e.pointer.replace(/^\/body(?=\/|$)/, '') }));
  return { code: document.code, detail: document.detail, ...(errors ? { errors } : {}) };
}

const kindOf = (schema: TSchema | undefined): string | undefined => (schema as { type?: string } | undefined)?.type;

const numeric = (kind: string | undefined) => kind === 'integer' || kind === 'number';

/** Whether a field's schema takes a number (an integer or any number) and no text: alone, or in a union with null. */
function takesNumber(schema: TSchema | undefined): boolean {
  if (numeric(kindOf(schema))) return true;
  const kinds = ((schema as { anyOf?: TSchema[] } | undefined)?.anyOf ?? []).map(kindOf);
  return kinds.some(numeric) && kinds.every((kind) => numeric(kind) || kind === 'null');
}

/**
 * A number as a JSON body writes it (digits, an optional fraction and exponent; leading zeros
 * allowed), not as JavaScript reads text: TypeBox's Convert would read 0x10 as 16, +5 and " 5" as
 * 5, and truncate 1.5 to 1 for an integer, where the create route refuses such a body.
 */
const NUMBER_TEXT = /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

/**
 * The create route's checks of a body, for one row of an import, in the route's order: the
 * protected fields (command-owned, read-only: refused) and the normalisers, then the create schema
 * as the route validates it (the same validator, the same problem with a field's own code). A CSV
 * row's cells are text: they are first converted by the schema (numbers, booleans, and a cell
 * holding JSON for an array or object field); a number cell is read as JSON writes a number.
 */
export class RowCheck {
  private readonly entity: ResolvedEntity;
  private readonly fields: (body: Record<string, unknown>) => void;
  private readonly validate: ReturnType<FastifySchemaCompiler<TSchema>>;
  private readonly format: (issues: ValidationIssue[], part: string) => Error;
  /** Fields whose cells carry JSON (an array or object field). */
  private readonly jsonFields: ReadonlySet<string>;
  /** Fields that take a number: their cells are read as JSON numbers (NUMBER_TEXT). */
  private readonly numberFields: ReadonlySet<string>;

  constructor(entity: ResolvedEntity) {
    this.entity = entity;
    this.fields = bodyFieldCheck(entity, 'create');
    this.validate = typeboxValidatorCompiler({
      schema: entity.schemas.create,
      httpPart: 'body',
      method: 'POST',
      url: entity.names.path,
    } as Parameters<FastifySchemaCompiler<TSchema>>[0]);
    const codes = entity.def.invalidCodes;
    this.format = codes ? fieldCodeFormatter(codes) : (issues, part) => validationProblem(issues, part);
    this.jsonFields = new Set(
      Object.entries(entity.def.fields)
        .filter(([, schema]) => kindOf(schema) === 'array' || kindOf(schema) === 'object')
        .map(([field]) => field),
    );
    this.numberFields = new Set(
      Object.entries(entity.def.fields)
        .filter(([, schema]) => takesNumber(schema))
        .map(([field]) => field),
    );
  }

  /** The names of a CSV header that are not fields a create takes, or none. */
  unknownColumns(header: readonly string[]): string[] {
    const known = new Set([...Object.keys(this.entity.def.fields), 'id', 'createdAt', 'updatedAt']);
    return header.filter((name) => !known.has(name));
  }

  /** A CSV row's text cells as the values the schema takes. */
  fromText(cells: Record<string, unknown>): Record<string, unknown> {
    const values: Record<string, unknown> = {};
    for (const [field, cell] of Object.entries(cells)) {
      if (typeof cell === 'string' && this.jsonFields.has(field) && /^\s*[[{]/.test(cell)) {
        try {
          values[field] = JSON.parse(cell);
          continue;
        } catch {
          // Left as text: the schema refuses it with its own pointer.
        }
      }
      values[field] = cell;
    }
    const converted = Value.Convert(this.entity.schemas.create, values) as Record<string, unknown>;
    // A number cell is the number JSON reads from it, or stays text for the schema to refuse.
    for (const field of this.numberFields) {
      const cell = cells[field];
      if (typeof cell === 'string') converted[field] = NUMBER_TEXT.test(cell) ? Number(cell) : cell;
    }
    return converted;
  }

  /** The row as the create stores it, or throws the problem the create route would answer. */
  check(values: Record<string, unknown>): Record<string, unknown> {
    this.fields(values);
    const result = this.validate(values) as { value?: unknown; error?: ValidationIssue[] };
    if (result.error) throw this.format(result.error, 'body');
    return result.value as Record<string, unknown>;
  }
}
