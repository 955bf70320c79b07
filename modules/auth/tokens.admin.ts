import Type from 'typebox';
import {
  ListFilters,
  registerAdminPage,
  renderTemplate,
  type AdminPageContext,
  type AdminSite,
  FORM_TOKEN_FIELD,
} from '../../framework/admin/index.ts';
import { problem, type ProblemError } from '../../framework/errors.ts';
import { PAGE_LIMIT_MAX } from '../../framework/operations/page-query.ts';
import { formatDateTime, when } from '../../framework/format.ts';
import { titleCase } from '../../framework/entity/names.ts';
import { tokenList, TokenListQuery } from './token-list.ts';
import {
  DEFAULT_TOKEN_DAYS,
  MAX_TOKEN_DAYS,
  createToken,
  listTokens,
  revokeToken,
  type AccessTokenView,
} from './tokens.ts';

/** The page mirrors the token routes: any signed-in person, for their own tokens. */
const access = 'signedIn' as const;
const PAGE = '/admin/auth/tokens';
const TokenParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
/** The page's own parameter besides the list's: a token was just revoked. */
const RevokedNotice = { revoked: Type.Optional(Type.String({ maxLength: 1 })) };

/**
 * The list's filters as the API's (tokenList): when a token expires and when it was made, and
 * the ones still valid or expired in one click.
 */
const filters = new ListFilters({
  base: PAGE,
  model: tokenList.model,
  fields: ['expiresAt', 'createdAt'],
  labelOf: (field) =>
    ({ expiresAt: 'Expires', createdAt: 'Created', lastUsedAt: 'Last used', name: 'Name' })[field] ?? titleCase(field),
  presets: [
    { label: 'Still valid', query: { expiresAt: 'gt.now' } },
    { label: 'Expired', query: { expiresAt: 'lte.now' } },
  ],
  defaultSort: '-createdAt',
  defaultLimit: PAGE_LIMIT_MAX,
});

/** The wildcard as a checkbox: only for a person who holds every permission. */
const EVERYTHING = '*';

interface TokenForm {
  name: string;
  days: string;
  permissions: readonly string[];
  nameError?: string;
  daysError?: string;
  permissionsError?: string;
}

const EMPTY_FORM: TokenForm = { name: '', days: String(DEFAULT_TOKEN_DAYS), permissions: [] };

const postedList = (value: unknown): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(String);

/**
 * The "Access tokens" page of the admin shell (issue 35): the signed-in person makes personal
 * access tokens (name, days until it expires, a checkbox per permission they hold), sees the raw
 * token once, lists and revokes their own. Each form runs the operation the API route runs
 * (tokens.ts: createToken, listTokens, revokeToken) with the route's access, so the same rules
 * apply; their refusals are shown as sentences, never as codes. An administrator revokes other
 * people's tokens through DELETE /api/v1/auth/tokens/{id} (docs/auth.md).
 */
export function registerTokenPages(site: AdminSite): void {
  registerAdminPage(site, {
    path: PAGE,
    access,
    summary: 'Access tokens',
    schema: { querystring: filters.pageQuery(TokenListQuery, RevokedNotice) },
    handler: async (page) => {
      const asked = filters.request(page);
      if (asked.changed) return page.redirect(asked.href);
      return renderPage(page, EMPTY_FORM, { revoked: page.query.revoked === '1' });
    },
  });

  registerAdminPage(site, {
    method: 'POST',
    path: PAGE,
    access,
    summary: 'Create an access token',
    publishes: ['auth.token_created'],
    handler: async (page) => {
      const form = postedForm(page.body);
      const days = Number(form.days);
      // The route's body schema, for a form: a name, and a whole number of days from 1 (the operation refuses past a year itself).
      if (form.name.trim() === '' || form.name.length > 100)
        throw problem('VALIDATION_FAILED', 'name', { errors: [{ pointer: '/body/name', message: 'name' }] });
      if (!Number.isInteger(days) || days < 1)
        throw problem('VALIDATION_FAILED', 'expiresInDays', {
          errors: [{ pointer: '/body/expiresInDays', message: 'days' }],
        });
      const created = await createToken(page.tx, site.services.registry, {
        name: form.name,
        expiresInDays: days,
        permissions: form.permissions,
      });
      page.reply.code(201);
      return renderPage(page, EMPTY_FORM, {
        created: { name: created.token.name, raw: created.raw, expires: formatDateTime(created.token.expiresAt) },
      });
    },
    // A refused form comes back as posted, with a sentence beside the field it concerns.
    onError: async (page, refused) => {
      if (refused.status !== 422 && refused.status !== 403) return null;
      return renderPage(page, refusalOnForm(postedForm(page.body), refused), { failed: true, status: refused.status });
    },
  });

  registerAdminPage(site, {
    method: 'POST',
    path: `${PAGE}/:id/revoke`,
    access,
    summary: 'Revoke an access token',
    publishes: ['auth.token_revoked'],
    schema: { params: TokenParams },
    handler: async (page) => {
      await revokeToken(page.tx, page.params.id!);
      return page.redirect(`${PAGE}?revoked=1`);
    },
  });

  /** The list, the form (as posted, with its refusals), and the raw token when one was just made. */
  async function renderPage(
    page: AdminPageContext,
    form: TokenForm,
    state: {
      created?: { name: string; raw: string; expires: string };
      revoked?: boolean;
      failed?: boolean;
      status?: number;
    },
  ): Promise<string> {
    // The newest hundred: a page of the API's list at its largest size; a person holding more revokes through the API.
    // A form's answer (a post) lists them as the page opens; the page itself, as its address filters.
    const asked = filters.request(page.request.method === 'GET' ? page : ({ ...page, query: {} } as AdminPageContext));
    const tokens = (await listTokens(page.tx, { ...asked.query, limit: PAGE_LIMIT_MAX, offset: 0, sort: '-createdAt' }))
      .page.items;
    const body = renderTemplate('./admin/pages/tokens', {
      tokens: tokens.map((t) => rowOf(t, page.tx.now)),
      filters: await filters.form(page, asked.pairs, { label: 'Filter your tokens' }),
      form: { ...form, maxDays: MAX_TOKEN_DAYS },
      choices: permissionChoices(page, form.permissions),
      created: state.created ?? null,
      revoked: state.revoked === true,
      failed: state.failed === true,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({ title: 'Access tokens', body, ...(state.status ? { status: state.status } : {}) });
  }

  /** One checkbox per permission the person holds now: a token may hold no other. */
  function permissionChoices(page: AdminPageContext, ticked: readonly string[]) {
    const held = page.tx.session?.permissions ?? new Set<string>();
    const all = held.has(EVERYTHING);
    const declared = [...site.services.registry.permissions.values()].filter((p) =>
      all ? !p.operator || page.tx.tenant.isOperator : held.has(p.name),
    );
    const choices = declared.map((p) => ({ name: p.name, description: p.description ?? '' }));
    if (all) choices.unshift({ name: EVERYTHING, description: 'Everything you can do, now and as your roles change' });
    return choices.map((c) => ({
      ...c,
      id: `token-perm-${c.name === EVERYTHING ? 'all' : c.name.replace(/[^A-Za-z0-9_-]/g, '-')}`,
      checked: ticked.includes(c.name),
    }));
  }
}

function postedForm(body: Record<string, unknown>): TokenForm {
  return {
    name: typeof body.name === 'string' ? body.name : '',
    days: typeof body.expiresInDays === 'string' ? body.expiresInDays.trim() : String(DEFAULT_TOKEN_DAYS),
    permissions: postedList(body.permissions),
  };
}

/** Where a refusal of the tokens operation goes on the form, in words. */
function refusalOnForm(form: TokenForm, refused: ProblemError): TokenForm {
  switch (refused.code) {
    case 'TOKEN_EXPIRY_TOO_LONG':
      return { ...form, daysError: `A token can last at most ${MAX_TOKEN_DAYS} days.` };
    case 'VALIDATION_FAILED':
      return refused.errors?.some((e) => e.pointer === '/body/expiresInDays')
        ? { ...form, daysError: `Choose a whole number of days from 1 to ${MAX_TOKEN_DAYS}.` }
        : { ...form, nameError: 'Give the token a name of at most 100 characters.' };
    case 'TOKEN_PERMISSION_NOT_HELD':
    case 'PERMISSION_UNKNOWN':
      return {
        ...form,
        permissionsError: 'A token can only do what you can do yourself. Untick what you no longer hold and try again.',
      };
    default:
      return { ...form, nameError: 'The token could not be created. Check the values and try again.' };
  }
}

function rowOf(token: AccessTokenView, now: Date) {
  return {
    expired: token.expiresAt.getTime() <= now.getTime(),
    id: token.id,
    name: token.name,
    permissions: token.permissions.includes(EVERYTHING)
      ? 'everything you can do'
      : token.permissions.join(', ') || 'none',
    created: when(token.createdAt),
    expires: when(token.expiresAt),
    lastUsed: token.lastUsedAt ? when(token.lastUsedAt) : null,
  };
}
