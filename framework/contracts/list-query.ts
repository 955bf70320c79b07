/**
 * A list's query language as a declaration names it: the QueryList a hand-written list answers
 * with (framework/query/query-list.ts). The declaration holds it without knowing its shape, so the
 * definition files import contracts only; the framework takes it back as a QueryList at boot
 * (framework/live/sources.ts) and refuses anything else.
 */
export interface DeclaredListQuery {
  /** The list's filters, sort keys and fields, as the query language reads them. */
  readonly model: unknown;
}
