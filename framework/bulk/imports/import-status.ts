import Type from 'typebox';
import { StringEnum } from '../../entity/string-enum.ts';
import type { Selectable } from 'kysely';
import type { TxContext } from '../../context/tx.ts';
import type { Database } from '../../db/types.ts';
import { DateTime } from '../../entity/date-time.ts';
import { named } from '../../openapi/schema-name.ts';
import { API_PREFIX } from '../../entity/names.ts';
import { declareUniqueKeys } from '../../db/unique-keys.ts';

// One refusal per line of an import: the worker writes each line's once (its progress commits with it).
declareUniqueKeys({ import_refusals_pkey: { fields: [], detail: 'This line of the import was already reported' } });

export type ImportRow = Selectable<Database['imports']>;

/** Where an import's progress is read. */
export const IMPORTS_PATH = `${API_PREFIX}/imports`;
export const importPath = (id: string) => `${IMPORTS_PATH}/${id}`;

/** Refused rows an answer lists at most; the rest follow with afterLine. */
export const REFUSALS_PAGE_MAX = 1000;
/** Refused rows kept per import: every one is counted, the first this many are listed. */
export const REFUSALS_KEPT = 10_000;

const Problem = Type.Object(
  {
    code: Type.String(),
    detail: Type.String(),
    errors: Type.Optional(
      Type.Array(Type.Object({ pointer: Type.String(), message: Type.String() }, { additionalProperties: false })),
    ),
  },
  { additionalProperties: false },
);

export const ImportStatus = named(
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      resource: Type.String({ description: 'The entity whose list the rows go to, <module>.<entity>' }),
      path: Type.String({ description: 'The list the rows are created in, as its create route takes them' }),
      format: StringEnum(['csv', 'ndjson']),
      dryRun: Type.Boolean({ description: 'Rows are checked and counted, nothing is written' }),
      status: StringEnum(['queued', 'running', 'done', 'failed'], {
        description: 'queued, running, then done; failed when the upload could not be read on (see problem)',
      }),
      size: Type.Integer({ minimum: 0, description: 'Bytes uploaded' }),
      rowsRead: Type.Integer({ minimum: 0, description: 'Data rows read so far (the CSV header is no row)' }),
      created: Type.Integer({ minimum: 0, description: 'Rows created (always 0 in a dry run)' }),
      valid: Type.Integer({ minimum: 0, description: 'Rows that passed every check (in a dry run: would be created)' }),
      refused: Type.Integer({ minimum: 0, description: 'Rows refused, each listed in refusals' }),
      refusals: Type.Array(
        Type.Object(
          {
            line: Type.Integer({
              minimum: 1,
              description: 'The line of the upload the row starts on (the header is line 1 of a CSV)',
            }),
            problem: Problem,
          },
          { additionalProperties: false },
        ),
        {
          description: `The refused rows after afterLine, by line, at most ${REFUSALS_PAGE_MAX} (the first ${REFUSALS_KEPT} refusals of an import are kept)`,
        },
      ),
      refusalsNext: Type.Union([Type.Integer(), Type.Null()], {
        description: 'More refused rows follow: ask again with afterLine set to this',
      }),
      problem: Type.Union([Problem, Type.Null()], { description: 'Why a failed import stopped' }),
      createdAt: DateTime(),
      finishedAt: Type.Union([DateTime(), Type.Null()]),
    },
    { additionalProperties: false },
  ),
  'ImportStatus',
);

/** An import as its status route answers it, with a page of its refused rows. */
export async function importStatus(
  tx: TxContext,
  row: ImportRow,
  path: string,
  options: { afterLine?: number; limit?: number } = {},
) {
  const limit = options.limit ?? 100;
  const refusals = await tx.db
    .selectFrom('import_refusals')
    .select(['line', 'problem'])
    .where('import_id', '=', row.id)
    .where('line', '>', options.afterLine ?? 0)
    .orderBy('line')
    .limit(limit + 1)
    .execute();
  const more = refusals.length > limit;
  const listed = refusals.slice(0, limit);
  return {
    id: row.id,
    resource: row.resource,
    path,
    format: row.format,
    dryRun: row.dry_run,
    status: row.status,
    size: Number(row.size),
    rowsRead: row.rows_read,
    created: row.created,
    valid: row.rows_read - row.refused,
    refused: row.refused,
    refusals: listed.map((r) => ({ line: r.line, problem: r.problem as never })),
    refusalsNext: more ? listed[listed.length - 1]!.line : null,
    problem: (row.problem ?? null) as never,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  };
}
