/**
 * What a person reads about a field in the admin shell, beside the API's `description` (which is
 * for developers and may name codes, events and patterns). The generated pages take a field's
 * label and hint from here, and phrase a refused value from its schema's rules
 * (framework/admin/field-messages.ts) unless a message here says it better.
 */
export interface FieldText {
  /** The field's name on forms, tables and detail pages ("Due", "Assigned to"). */
  label: string;
  /** One or two plain sentences under the input: what to put there. No codes, event names or patterns. */
  hint: string;
  /**
   * Per rule, the sentence a refused value shows instead of the one derived from the schema. A
   * pattern needs its own (a regular expression is no message: "Use lowercase letters, digits and
   * single hyphens, like about-us"); a reference reads better as what to choose ("Choose a person").
   */
  messages?: FieldMessages;
}

/** The rules a field's value can break, as the admin phrases them (framework/admin/field-messages.ts). */
export type FieldRule =
  | 'required'
  | 'length'
  | 'pattern'
  | 'format'
  | 'choice'
  | 'range'
  | 'number'
  | 'items'
  | 'json'
  | 'reference';

export type FieldMessages = Partial<Readonly<Record<FieldRule, string>>>;

/** The text of each field, by field name. */
export type FieldTexts<K extends string = string> = { readonly [P in K]: FieldText };

/** A command as the admin shell offers it: the button, the form's opening sentence, its body's fields. */
export interface CommandText {
  /** The button and the form's submit ("Check the deadline"); default: the command's name in words. */
  label?: string;
  /** The form's opening sentence, for people; default: the command's summary. */
  intro?: string;
  /** The command body's fields. */
  fields?: FieldTexts;
}

/** The labels of the columns every entity has. */
export const SYSTEM_FIELD_TEXT: FieldTexts<'id' | 'createdAt' | 'updatedAt'> = {
  id: { label: 'Identifier', hint: 'Made by the service when the record was created.' },
  createdAt: { label: 'Created', hint: 'When the record was created.' },
  updatedAt: { label: 'Last changed', hint: 'When the record was last changed.' },
};
