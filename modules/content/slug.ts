import Type from 'typebox';

/** Lower-case letters and digits in words joined by single hyphens, after normalising. */
export const SLUG_PATTERN = '^[a-z0-9]+(-[a-z0-9]+)*$';
export const SLUG_MAX = 100;

/**
 * The one stored form of a slug, applied to every write and every lookup: Unicode NFKC (so a
 * full-width or ligature spelling is the same slug), surrounding white space trimmed, lower-cased.
 */
export const normaliseSlug = (value: string): string => value.normalize('NFKC').trim().toLowerCase();

export const Slug = Type.String({
  minLength: 1,
  maxLength: SLUG_MAX,
  pattern: SLUG_PATTERN,
  description:
    `Normalised first (Unicode NFKC, trimmed, lower-cased), then 1–${SLUG_MAX} characters of ${SLUG_PATTERN}; ` +
    "anything else is 422 SLUG_INVALID. Unique among the tenant's live contents (409 SLUG_TAKEN); a delete releases it.",
});
