import type { ResolvedEntity } from '../../entity/resolve.ts';

/**
 * The public page of a record (PublicReadDefinition.page, e.g. /p/<slug> for a content), when the
 * record is public now: it meets the public read's `where` (a published content) and has its
 * lookup value. Undefined otherwise, so a draft's detail page offers no link that could only 404.
 */
export function publicPageHref(entity: ResolvedEntity, row: Record<string, unknown>): string | undefined {
  const spec = entity.def.publicRead;
  if (!spec?.page) return undefined;
  for (const [field, value] of Object.entries(spec.where ?? {})) if (row[field] !== value) return undefined;
  const key = row[spec.by];
  return typeof key === 'string' && key !== '' ? `${spec.page.path}/${encodeURIComponent(key)}` : undefined;
}
