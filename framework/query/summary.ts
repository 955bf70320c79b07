import Type, { type TProperties, type TSchema } from 'typebox';
import { problem, type ProblemError } from '../errors.ts';
import type { FieldKind } from './field-types.ts';
import type { QueryField, QueryModel } from './query-model.ts';
import { withRefusal } from './refusals.ts';

/**
 * A list's summary (`GET <list>/summary`): counts of its matching rows per group, and sums,
 * averages, minimums and maximums of its numeric and date-time fields, in one statement. The
 * filters are the list's own (parse.ts and compile.ts read them); this module reads only the
 * summary's parameters (groupBy, sum, avg, min, max, tz), says which fields they take, and builds
 * the statement's text around the list's conditions.
 */

/** At most this many groups are answered; `truncated: true` says there were more. */
export const SUMMARY_GROUPS_MAX = 1000;

/** The summary's own parameters: everything else in its query string is one of the list's filters. */
export const SUMMARY_PARAMETERS = ['groupBy', 'sum', 'avg', 'min', 'max', 'tz'] as const;

export const BUCKETS = ['day', 'week', 'month'] as const;
export type Bucket = (typeof BUCKETS)[number];

export type AggregateName = 'sum' | 'avg' | 'min' | 'max';
const AGGREGATES: readonly AggregateName[] = ['sum', 'avg', 'min', 'max'];

/** Kinds a summary groups by as they stand (a date-time only by a bucket: no two instants are alike). */
const GROUPED: ReadonlySet<FieldKind> = new Set(['enum', 'boolean', 'text', 'uuid', 'integer', 'date']);
/** Kinds grouped by a bucket (`deadline:day`). */
const BUCKETED: ReadonlySet<FieldKind> = new Set(['dateTime', 'date']);
/** Kinds summed and averaged. */
const NUMERIC: ReadonlySet<FieldKind> = new Set(['integer', 'number']);
/** Kinds whose minimum and maximum are answered. */
const ORDERED: ReadonlySet<FieldKind> = new Set(['integer', 'number', 'dateTime', 'date']);

export interface SummaryGroupBy {
  field: QueryField;
  bucket?: Bucket;
}

export interface SummaryAggregate {
  name: AggregateName;
  field: QueryField;
}

export interface SummaryQuery {
  groupBy: readonly SummaryGroupBy[];
  aggregates: readonly SummaryAggregate[];
  /** The zone date-time buckets are cut in: UTC unless tz= names another. */
  tz: string;
}

/** What a model's summary takes: the fields each parameter may name. Worked out once at boot. */
export interface SummaryFields {
  grouped: QueryField[];
  bucketed: QueryField[];
  numeric: QueryField[];
  ordered: QueryField[];
}

export function summaryFields(model: QueryModel): SummaryFields {
  const fields = [...model.fields.values()].filter((f) => f.name !== 'id');
  return {
    grouped: fields.filter((f) => GROUPED.has(f.type.kind)),
    bucketed: fields.filter((f) => BUCKETED.has(f.type.kind)),
    numeric: fields.filter((f) => NUMERIC.has(f.type.kind)),
    ordered: fields.filter((f) => ORDERED.has(f.type.kind)),
  };
}

const escapeRegExp = (name: string) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const namesPattern = (names: readonly string[]): string => {
  const one = `(${names.map(escapeRegExp).join('|')})`;
  return `^${one}(,${one})*$`;
};

/** The groupBy values a model takes: each grouped field, each bucketed one with its bucket. */
const groupTokens = (fields: SummaryFields): string[] => [
  ...fields.grouped.map((f) => f.name),
  ...fields.bucketed.flatMap((f) => BUCKETS.map((b) => `${f.name}:${b}`)),
];

/** The summary's own parameters as its route declares them (beside the list's filter parameters). */
export function summaryParameters(model: QueryModel): TProperties {
  const fields = summaryFields(model);
  const out: TProperties = {};
  const tokens = groupTokens(fields);
  if (tokens.length > 0) {
    out.groupBy = withRefusal(
      Type.Optional(
        Type.String({
          pattern: namesPattern(tokens),
          description: `Fields to count the rows by, separated by commas (groupBy=${tokens.slice(0, 2).join(',')}): ${fields.grouped.map((f) => f.name).join(', ')}${fields.bucketed.length ? `; a date or date-time by day, week (from Monday) or month: ${fields.bucketed.map((f) => `${f.name}:day`).join(', ')}` : ''}. Without it, one group: every matching row.`,
        }),
      ),
      `groupBy takes ${tokens.join(', ')}, separated by commas`,
    );
  }
  const aggregate = (name: AggregateName, over: QueryField[], what: string) => {
    if (over.length === 0) return;
    const names = over.map((f) => f.name);
    out[name] = withRefusal(
      Type.Optional(
        Type.String({
          pattern: namesPattern(names),
          description: `The ${what} of these fields in each group, separated by commas: ${names.join(', ')}. Rows without a value are left out of it; null when no row of the group has one.`,
        }),
      ),
      `${name} takes ${names.join(', ')}, separated by commas`,
    );
  };
  aggregate('sum', fields.numeric, 'sum');
  aggregate('avg', fields.numeric, 'average');
  aggregate('min', fields.ordered, 'smallest value');
  aggregate('max', fields.ordered, 'largest value');
  if (fields.bucketed.length > 0) {
    out.tz = Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          'The IANA time zone date buckets are cut in (tz=Europe/Zurich); UTC by default. A zone that is not one is 422 VALIDATION_FAILED.',
      }),
    );
  }
  return out;
}

/** The answer of a summary: its groups (each field grouped by, the count and the aggregates asked), the total and truncated. */
export function summaryAnswerSchema(model: QueryModel): TSchema {
  const fields = summaryFields(model);
  const groupValue = (f: QueryField, bucket: boolean): TSchema => {
    const description = bucket
      ? `The group's ${f.name}, or its bucket's first day (YYYY-MM-DD, in tz) when grouped by a bucket; null for rows without one.`
      : `The group's ${f.name}; null for rows without one.`;
    switch (f.type.kind) {
      case 'boolean':
        return Type.Union([Type.Boolean(), Type.Null()], { description });
      case 'integer':
        return Type.Union([Type.Integer(), Type.Null()], { description });
      default:
        return Type.Union([Type.String(), Type.Null()], { description });
    }
  };
  const properties: TProperties = {};
  for (const f of fields.grouped) properties[f.name] = Type.Optional(groupValue(f, fields.bucketed.includes(f)));
  for (const f of fields.bucketed) properties[f.name] ??= Type.Optional(groupValue(f, true));
  properties.count = Type.Integer({ minimum: 0, description: 'The rows of the group.' });
  const values = (over: QueryField[], kind: 'number' | 'ordered') =>
    Type.Object(
      Object.fromEntries(
        over.map((f) => [
          f.name,
          Type.Optional(
            kind === 'number' || NUMERIC.has(f.type.kind)
              ? Type.Union([Type.Number(), Type.Null()])
              : Type.Union([Type.String(), Type.Null()]),
          ),
        ]),
      ),
      { additionalProperties: false },
    );
  if (fields.numeric.length > 0) {
    properties.sum = Type.Optional(values(fields.numeric, 'number'));
    properties.avg = Type.Optional(values(fields.numeric, 'number'));
  }
  if (fields.ordered.length > 0) {
    properties.min = Type.Optional(values(fields.ordered, 'ordered'));
    properties.max = Type.Optional(values(fields.ordered, 'ordered'));
  }
  return Type.Object(
    {
      groups: Type.Array(Type.Object(properties, { additionalProperties: false }), {
        description: `At most ${SUMMARY_GROUPS_MAX} groups, in the order of the fields grouped by (an enum in its declared order; rows without a value last).`,
      }),
      total: Type.Integer({ minimum: 0, description: 'The rows that match the filters, in every group.' }),
      truncated: Type.Boolean({ description: `True when there are more than ${SUMMARY_GROUPS_MAX} groups.` }),
    },
    { additionalProperties: false },
  );
}

const refusal = (parameter: string, message: string): ProblemError =>
  problem('VALIDATION_FAILED', message, { errors: [{ pointer: `/querystring/${parameter}`, message }] });

/**
 * Whether the IANA time zone database (as Node's Intl knows it) has this zone. Intl also takes a
 * UTC offset (`+05:00`), which names no zone of the database, and which PostgreSQL's `at time
 * zone` reads the POSIX way round (five hours west of Greenwich): refused, never misread.
 */
export function isTimeZone(zone: string): boolean {
  try {
    return !/^[+-]/.test(new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone);
  } catch {
    return false;
  }
}

/**
 * The summary's parameters of a request, and the rest of its query string (the list's filters,
 * for parse.ts); 422 for a field a parameter does not take, or a zone that is none.
 */
export function parseSummary(
  model: QueryModel,
  query: Readonly<Record<string, unknown>>,
): { summary: SummaryQuery; filters: Record<string, unknown> } {
  const fields = summaryFields(model);
  const filters: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    if (!(SUMMARY_PARAMETERS as readonly string[]).includes(name)) filters[name] = value;
  }
  const names = (parameter: string): string[] => {
    const value = query[parameter];
    if (value === undefined) return [];
    if (typeof value !== 'string' || value === '')
      throw refusal(parameter, `${parameter} takes field names separated by commas`);
    return value.split(',');
  };
  const groupBy: SummaryGroupBy[] = [];
  const seen = new Set<string>();
  for (const token of names('groupBy')) {
    const [name, bucket] = token.split(':') as [string, string | undefined];
    const field = (bucket === undefined ? fields.grouped : fields.bucketed).find((f) => f.name === name);
    if (!field || (bucket !== undefined && !(BUCKETS as readonly string[]).includes(bucket))) {
      throw refusal('groupBy', `groupBy takes ${groupTokens(fields).join(', ')}; "${token}" is not one of them`);
    }
    if (seen.has(name)) throw refusal('groupBy', `groupBy names ${name} twice; name each field once`);
    seen.add(name);
    groupBy.push({ field, ...(bucket ? { bucket: bucket as Bucket } : {}) });
  }
  const aggregates: SummaryAggregate[] = [];
  for (const name of AGGREGATES) {
    const over = name === 'sum' || name === 'avg' ? fields.numeric : fields.ordered;
    for (const written of new Set(names(name))) {
      const field = over.find((f) => f.name === written);
      if (!field) {
        throw refusal(
          name,
          `${name} takes ${over.map((f) => f.name).join(', ') || 'no field of this list'}; "${written}" is not one of them`,
        );
      }
      aggregates.push({ name, field });
    }
  }
  const tz = query.tz === undefined ? 'UTC' : String(query.tz);
  if (!isTimeZone(tz)) {
    throw refusal('tz', `tz takes an IANA time zone (Europe/Zurich, America/New_York, UTC); "${tz}" is not one`);
  }
  return { summary: { groupBy, aggregates, tz }, filters };
}

/**
 * The summary's one statement over the list's rows: `from` the table, `conditions` every matching
 * row meets (its parameters `params`, numbered from $1). Groups come with the total of the rows
 * in every group and the number of groups (window functions over the grouped rows), one more
 * than the cap read to tell a truncated answer.
 */
export function summaryStatement(
  from: string,
  conditions: readonly string[],
  params: readonly unknown[],
  summary: SummaryQuery,
): { text: string; params: unknown[] } {
  const all = [...params];
  const where = conditions.length ? ` where ${conditions.join(' and ')}` : '';
  const bucketed = summary.groupBy.some((g) => g.bucket !== undefined);
  let zone = '';
  if (bucketed) {
    all.push(summary.tz);
    zone = `$${all.length}::text`;
  }
  const select: string[] = [];
  const order: string[] = [];
  summary.groupBy.forEach((g, i) => {
    const { column, type } = g.field;
    if (g.bucket) {
      const local = type.kind === 'dateTime' ? `(${column} at time zone ${zone})` : `${column}::timestamp`;
      select.push(`to_char(date_trunc('${g.bucket}', ${local}), 'YYYY-MM-DD') as "g${i}"`);
      order.push(`${i + 1} nulls last`);
    } else {
      select.push(`${type.kind === 'date' ? `${column}::text` : column} as "g${i}"`);
      // An enum in its declared order (its position over the grouped column), the rest by value.
      order.push(`${type.kind === 'enum' ? g.field.order : i + 1} nulls last`);
    }
  });
  summary.aggregates.forEach((a, i) => {
    const { column, type } = a.field;
    const value = `${a.name}(${column})`;
    select.push(
      `${
        type.kind === 'dateTime'
          ? `to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
          : type.kind === 'date'
            ? `${value}::text`
            : `${value}::float8`
      } as "a${i}"`,
    );
  });
  select.push('count(*) as "n"');
  if (summary.groupBy.length === 0) {
    return {
      text: `select ${select.join(', ')}, count(*) as "total", 1 as "groups" from ${from}${where}`,
      params: all,
    };
  }
  const positions = summary.groupBy.map((_, i) => i + 1).join(', ');
  const text = `select ${select.join(', ')}, sum(count(*)) over () as "total", count(*) over () as "groups"
  from ${from}${where}
 group by ${positions}
 order by ${order.join(', ')}
 limit ${SUMMARY_GROUPS_MAX + 1}`;
  return { text, params: all };
}

export interface SummaryAnswer {
  groups: Record<string, unknown>[];
  total: number;
  truncated: boolean;
}

/** The answer from the statement's rows. */
export function summaryAnswer(rows: readonly Record<string, unknown>[], summary: SummaryQuery): SummaryAnswer {
  const groups = rows.slice(0, SUMMARY_GROUPS_MAX).map((row) => {
    const group: Record<string, unknown> = {};
    summary.groupBy.forEach((g, i) => {
      const value = row[`g${i}`];
      group[g.field.name] =
        value === null || value === undefined ? null : g.field.type.kind === 'integer' ? Number(value) : value;
    });
    group.count = Number(row.n);
    summary.aggregates.forEach((a, i) => {
      const value = row[`a${i}`];
      const into = (group[a.name] ??= {}) as Record<string, unknown>;
      into[a.field.name] =
        value === null || value === undefined
          ? null
          : typeof value === 'string' && NUMERIC.has(a.field.type.kind)
            ? Number(value)
            : value;
    });
    return group;
  });
  const first = rows[0];
  return {
    groups,
    total: first ? Number(first.total) : 0,
    truncated: first ? Number(first.groups) > SUMMARY_GROUPS_MAX : false,
  };
}
