import Type from 'typebox';
import { describe, expectTypeOf, it } from 'vitest';
import {
  pageQuerySchema,
  registerAdminPage,
  type AdminSite,
  type PageQuery,
  type Validated,
} from '../../framework/admin/index.ts';

// Issue 43, point 4: a hand-written admin page's `query` and `params` are typed from its TypeBox
// schemas, through the admin shell's entry point. Each `@ts-expect-error` line is a compile error
// the check expects: were a page able to read a key its schema lacks, the directive would be
// unused and the type check would fail.

declare const site: AdminSite;
const access = { permission: 'thing:read' };
const ListQuery = pageQuerySchema({ sorts: ['name'], defaultSort: 'name' });
const ThingParams = Type.Object({ name: Type.String() });
const Saved = Type.Object({ saved: Type.Optional(Type.String({ maxLength: 1 })) });

describe('an admin page reads what its schemas declare', () => {
  it('a list page: paging typed, the defaults present, nothing else', () => {
    registerAdminPage(site, {
      path: '/admin/m/things',
      access,
      summary: 'Things',
      schema: { querystring: ListQuery },
      handler: async (page) => {
        expectTypeOf(page.query.limit).toEqualTypeOf<number>();
        expectTypeOf(page.query.offset).toEqualTypeOf<number>();
        expectTypeOf(page.query.sort).toEqualTypeOf<string>();
        expectTypeOf(page.query.after).toEqualTypeOf<string | undefined>();
        expectTypeOf(page.query).toExtend<PageQuery>();
        // @ts-expect-error the list's schema has no `status`
        void page.query.status;
        // @ts-expect-error no params schema: the page reads no params
        void page.params.id;
        return '';
      },
    });
  });

  it('a record page: its params and its own query keys, nothing else', () => {
    registerAdminPage(site, {
      path: '/admin/m/things/:name',
      access,
      summary: 'A thing',
      schema: { params: ThingParams, querystring: Saved },
      handler: async (page) => {
        expectTypeOf(page.params.name).toEqualTypeOf<string>();
        expectTypeOf(page.query.saved).toEqualTypeOf<string | undefined>();
        // @ts-expect-error the params schema has no `id`
        void page.params.id;
        // @ts-expect-error the query schema has no `limit`
        void page.query.limit;
        return '';
      },
    });
  });

  it('a page without schemas reads neither', () => {
    registerAdminPage(site, {
      path: '/admin/m/about',
      access,
      summary: 'About',
      handler: async (page) => {
        // @ts-expect-error no querystring schema: the page reads no query
        void page.query.next;
        return '';
      },
    });
  });

  it('a searchable list’s q is an optional string', () => {
    const Searchable = pageQuerySchema({ sorts: ['name'], defaultSort: 'name', searches: ['name'] });
    expectTypeOf<Validated<typeof Searchable>['q']>().toEqualTypeOf<string | undefined>();
  });
});
