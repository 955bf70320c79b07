import Type, { type TSchema } from 'typebox';
import { WithDefault } from '../entity/storage.ts';
import { named, nameOf } from '../openapi/schema-name.ts';
import { pageSchemaName } from '../entity/names.ts';
import { StringEnum } from '../entity/string-enum.ts';

export type { Page, PageQuery } from '../contracts/operations.ts';

/**
 * What every list takes and answers, generated and hand-written alike: the query parameters
 * (limit, offset, sort, after) and the answer ({ items, total, totalExact, limit, offset, next }).
 * The SQL that reads a page is the pager's (paging.ts).
 */

export const PAGE_LIMIT_DEFAULT = 20;
export const PAGE_LIMIT_MAX = 100;
/** The deepest offset: past it, a client follows `next` (the `after` cursor), which costs the same on every page. */
export const OFFSET_MAX = 10_000;
/** Rows counted at most for `total`; past it `total` is the cap and `totalExact` is false. */
export const TOTAL_CAP = 10_000;
export const CURSOR_MAX_LENGTH = 1024;
export const OFFSET_REFUSAL = `offset is at most ${OFFSET_MAX}; to page further, pass the previous page's "next" as after=<cursor>`;

/** The longest `q` a list takes. */
export const SEARCH_MAX_LENGTH = 200;

/** The query string of a list: sort takes the given keys, each also with a leading "-" for descending. */
export function pageQuerySchema(options: {
  sorts: readonly string[];
  defaultSort: string;
  sortDescription?: string;
  searches?: readonly string[];
}) {
  const searches = options.searches ?? [];
  const sortValues = options.sorts.flatMap((s) => [s, `-${s}`]);
  return Type.Object(
    {
      // The defaults are declared with WithDefault, so the schema's type says a validated query has them.
      limit: Type.Optional(
        WithDefault(
          Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, description: `Page size, 1 to ${PAGE_LIMIT_MAX}.` }),
          PAGE_LIMIT_DEFAULT,
        ),
      ),
      offset: Type.Optional(
        WithDefault(
          Type.Integer({
            minimum: 0,
            maximum: OFFSET_MAX,
            description: `Rows to skip, 0 to ${OFFSET_MAX}. Deeper pages are reached with after=<next>, which costs the same on every page; offset and after do not combine.`,
          }),
          0,
        ),
      ),
      sort: Type.Optional(
        WithDefault(
          StringEnum(sortValues, {
            description:
              options.sortDescription ??
              'Field to sort by; a leading "-" sorts descending. Ties break on id, in the same direction.',
          }),
          options.defaultSort,
        ),
      ),
      after: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: CURSOR_MAX_LENGTH,
          pattern: '^[A-Za-z0-9_-]+$',
          description:
            'Opaque, signed cursor: the "next" of the previous page, with the same sort and filters. Answers the rows after that page (keyset paging). A cursor this list did not give (another list\'s, another tenant\'s, one given with other filters, an edited or unsigned one), or one given for another sort, is 422 VALIDATION_FAILED.',
        }),
      ),
      ...(searches.length > 0
        ? {
            q: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: SEARCH_MAX_LENGTH,
                description: `Search: only rows whose ${searches.join(' or ')} contains this text, ignoring case (a plain substring: no wildcards, no operators). total and paging count the matching rows. 1 to ${SEARCH_MAX_LENGTH} characters.`,
              }),
            ),
          }
        : {}),
    },
    { additionalProperties: false },
  );
}

/** The answer of a list of `item`; named <Item>Page in the OpenAPI document when the item is named. */
export function pageSchema<T extends TSchema>(item: T, description?: string) {
  const itemName = nameOf(item);
  const page = Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer({
        minimum: 0,
        maximum: TOTAL_CAP,
        description: `Rows the list covers across all pages, counted up to ${TOTAL_CAP}: past that, total is ${TOTAL_CAP} and totalExact is false. A page read with after answers the count its walk's first page took (the cursor carries it), so a walk counts once; read the first page again for a fresh count.`,
      }),
      totalExact: Type.Boolean({
        description: `False when there are more than ${TOTAL_CAP} rows and total stopped counting at ${TOTAL_CAP}.`,
      }),
      limit: Type.Integer({ description: 'The page size used.' }),
      offset: Type.Integer({ description: 'The rows skipped (0 when paging with after).' }),
      next: Type.Union([Type.String(), Type.Null()], {
        description:
          'Cursor of the following page, to send as after=<next> with the same sort and limit; null on the last page.',
      }),
    },
    { additionalProperties: false, ...(description ? { description } : {}) },
  );
  return itemName ? named(page, pageSchemaName(itemName)) : page;
}

/** The message a refused paging parameter carries, where it says more than the schema can. */
export function pagingRefusal(pointer: string, keyword: string | undefined): string | undefined {
  return pointer === '/querystring/offset' && keyword === 'maximum' ? OFFSET_REFUSAL : undefined;
}
