import type { TxContext } from '../context/tx.ts';
import { compileFilter } from '../query/compile.ts';
import { admitReferences, selectFields } from '../query/expansion.ts';
import type { Selection } from '../query/parse.ts';
import type { LiveSource } from './sources.ts';

/**
 * What a stream's query string asks (the list's filters, or and fields: docs/api-conventions.md,
 * "Live changes"), read when it opens by the list's own parser and compiled by its own compiler,
 * in the caller's transaction: a value the list reads relative to now (`deadline=lt.now`) is read
 * then, and a filter through a reference carries the caller's row access on the referenced table.
 */

/** A stream's filter as the batch statement evaluates it on each changed row. */
export interface StreamFilter {
  /** Streams of one list with the same conditions and values share one evaluation per batch. */
  readonly key: string;
  /** Conditions that all hold, their parameters numbered from $1. */
  readonly conditions: readonly string[];
  readonly params: readonly unknown[];
}

export interface StreamQuery {
  /** Undefined: every row of the list matches. */
  readonly filter: StreamFilter | undefined;
  /** Permissions the query needs besides the list's (each reference it filters through): checked at every batch too. */
  readonly permissions: readonly string[];
  /** `fields=`: undefined when the whole row is sent. */
  readonly selection: Selection | undefined;
  /** The fields as written, for sharing one serializer between streams that name the same ones. */
  readonly fields: string;
}

/**
 * The stream's query from its query string: 422 VALIDATION_FAILED for what the list would refuse,
 * 403 AUTH_FORBIDDEN for a reference the caller may not read, both before the stream starts.
 */
export function streamQuery(tx: TxContext, source: LiveSource, query: Readonly<Record<string, unknown>>): StreamQuery {
  if (!source.parse) return { filter: undefined, permissions: [], selection: undefined, fields: '' };
  const asked = source.parse(query, tx.now);
  admitReferences(asked, (permission) => tx.can(permission));
  const compiled = compileFilter(asked, 1, tx);
  const filter =
    compiled.conditions.length > 0
      ? {
          key: JSON.stringify([compiled.conditions, compiled.params]),
          conditions: compiled.conditions,
          params: compiled.params,
        }
      : undefined;
  return {
    filter,
    permissions: [...new Set(asked.references.map((r) => r.target.permission))],
    selection: asked.select,
    fields: typeof query.fields === 'string' ? query.fields : '',
  };
}

/** A row serializer that keeps the id and the fields `fields=` names (JSON.stringify, as the list's answer then is). */
export function selectingSerializer(selection: Selection): (row: unknown) => string {
  return (row) => JSON.stringify(selectFields(row as Record<string, unknown>, selection, []));
}
