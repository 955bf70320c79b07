import Type, { type TSchema, type TString, type TStringOptions } from 'typebox';

/**
 * A Markdown text field: a string whose schema says `contentMediaType: text/markdown` (an
 * annotation of JSON Schema 2020-12, shown in OpenAPI, never validated). The API stores and
 * answers the text as written; the admin shell renders it with renderMarkdown (render.ts) on
 * detail pages and offers a preview in forms.
 */
export const MARKDOWN_MEDIA_TYPE = 'text/markdown';

export function Markdown(options: Omit<TStringOptions, 'contentMediaType'> = {}): TString {
  return Type.String({ ...options, contentMediaType: MARKDOWN_MEDIA_TYPE });
}

/** True for a schema declared by Markdown() (an optional or nullable one too). */
export function isMarkdown(schema: TSchema | undefined): boolean {
  if (!schema) return false;
  const node = schema as { contentMediaType?: unknown; anyOf?: { contentMediaType?: unknown }[] };
  return (
    node.contentMediaType === MARKDOWN_MEDIA_TYPE ||
    (node.anyOf ?? []).some((branch) => branch.contentMediaType === MARKDOWN_MEDIA_TYPE)
  );
}
