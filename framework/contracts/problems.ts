/**
 * What a problem code means, declared once by its owner: the framework for its own codes
 * (framework/errors.ts), a module for those it raises (ModuleDefinition.problems).
 */
export interface ProblemDeclaration {
  /** The HTTP status every answer with this code has. */
  status: number;
  /** The problem document's title: the same for every answer with this code. */
  title: string;
  /**
   * What the admin shell says to a person about this refusal (the code rides along only in a
   * data-code attribute). Omitted: the shell says the sentence of the status.
   */
  sentence?: string;
  /** The problem's own message is written for people: the shell shows it under the sentence. */
  detail?: true;
}

/**
 * Every problem code the service answers, by declaration merging, the way the table types of
 * `Database` are merged: the framework declares its own codes (framework/errors.ts), and each
 * module the codes it raises, beside their declaration (defineProblems):
 *   declare module '../../framework/contracts/problems.ts' { interface ProblemCodes extends ProblemCodesOf<typeof billingProblems> {} }
 * so `problem('PLAN_IN_USE')` compiles only where a module declared the code.
 */
// biome-ignore lint/suspicious/noEmptyInterface: the target of declaration merging, filled by the framework and each module
export interface ProblemCodes {}

export type ProblemCode = keyof ProblemCodes & string;

/** The codes of a declaration table, for a module's `interface ProblemCodes extends ProblemCodesOf<typeof table> {}`. */
export type ProblemCodesOf<T> = { readonly [K in keyof T & string]: ProblemDeclaration };

export interface FieldError {
  /** JSON pointer into the request part, e.g. /body/title */
  pointer: string;
  message: string;
}

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ProblemCode;
  errors?: FieldError[];
  [extension: string]: unknown;
}

/** A refusal with its code, as thrown and answered (framework/errors.ts, ProblemError). */
export interface Problem extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly extensions: Record<string, unknown>;
  toDocument(): ProblemDocument;
}
