import type {
  FieldError,
  Problem,
  ProblemCode,
  ProblemCodesOf,
  ProblemDeclaration,
  ProblemDocument,
} from './contracts/problems.ts';

/**
 * The framework's own problem codes: the refusals of the request path, the generic operations,
 * the state table, sessions and tokens, storage and the database. Every failure the service
 * answers is a ProblemError carrying a declared code; the HTTP layer turns it into
 * application/problem+json. A module declares the codes it raises itself, beside its code
 * (ModuleDefinition.problems, defineProblems): this list names no module's refusal. `sentence` is
 * what the admin shell says to a person (admin/errors.ts); `detail: true`, that the problem's own
 * message is written for people and is shown under it.
 */
export const PROBLEMS = {
  NO_SITE: { status: 404, title: 'No site', sentence: 'No site is served at this address.' },
  NOT_FOUND: { status: 404, title: 'Not found', sentence: 'This record does not exist, or it was deleted.' },
  ROUTE_NOT_FOUND: { status: 404, title: 'No such route', sentence: 'There is no page at this address.' },
  MALFORMED_REQUEST: {
    status: 400,
    title: 'Malformed request',
    sentence: 'The form could not be read. Reload the page and try again.',
  },
  FORBIDDEN: { status: 403, title: 'Forbidden', sentence: 'You are not allowed to do this.' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    title: 'Method not allowed',
    sentence: 'This page cannot be used that way. Go back and use its links and buttons.',
  },
  NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  LENGTH_REQUIRED: { status: 411, title: 'Length required' },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition failed' },
  URI_TOO_LONG: { status: 414, title: 'URI too long' },
  RANGE_NOT_SATISFIABLE: { status: 416, title: 'Range not satisfiable' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large' },
  VALIDATION_FAILED: {
    status: 422,
    title: 'Validation failed',
    sentence: 'Some values were not accepted.',
    detail: true,
  },
  FIELD_COMMAND_OWNED: {
    status: 422,
    title: 'Field is owned by a command',
    sentence: 'One of the values can only be changed with its own button on the record’s page.',
  },
  FIELD_IMMUTABLE: {
    status: 422,
    title: 'Field is immutable',
    sentence: 'One of the values cannot be changed after the record was created.',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    title: 'Idempotency key used for another request',
    sentence: 'This request was already sent with other values. Reload the page and try again.',
  },
  // A batch's request that cannot be batched (framework/bulk/batch.ts), and an import's upload the
  // worker cannot read as rows (framework/bulk/imports/).
  BATCH_REQUEST_UNSUPPORTED: {
    status: 422,
    title: 'Request cannot be part of a batch',
    sentence: 'One of the requests cannot be sent in a batch. Send it on its own.',
    detail: true,
  },
  IMPORT_FORMAT_UNKNOWN: {
    status: 422,
    title: 'Upload neither CSV nor NDJSON',
    sentence: 'The file is neither CSV nor NDJSON. Upload a .csv or .ndjson file.',
  },
  IMPORT_COLUMNS_UNKNOWN: {
    status: 422,
    title: 'CSV header names no field',
    sentence: 'A column of the file’s first line is not a field of this list.',
    detail: true,
  },
  IMPORT_UNREADABLE: {
    status: 422,
    title: 'Upload cannot be read',
    sentence: 'The file could not be read as rows.',
    detail: true,
  },
  AUTH_REQUIRED: { status: 401, title: 'Sign-in required', sentence: 'Sign in to continue.' },
  AUTH_FORBIDDEN: {
    status: 403,
    title: 'Permission denied',
    sentence: 'Your roles do not allow this. Ask an administrator for access.',
  },
  AUTH_NOT_OPERATOR: {
    status: 403,
    title: 'Operator permission outside the operator tenant',
    sentence: 'This page belongs to the operator’s administration and opens only at the operator’s own address.',
  },
  AUTH_CROSS_SITE: {
    status: 403,
    title: 'Cross-site request refused',
    sentence: 'This form has expired or was sent from another site. Reload the page and send it again.',
  },
  // The refusal of a module's attempt limit (ModuleDefinition.bearerAttempts), which every bearer route documents.
  ErrTooManyAttempts: {
    status: 429,
    title: 'Too many attempts',
    sentence: 'Too many failed sign-ins. Wait a few minutes and try again.',
  },
  TOKEN_INVALID: {
    status: 401,
    title: 'Invalid or expired token',
    sentence: 'This link is invalid or has expired. Ask for a new one.',
  },
  RATE_LIMITED: {
    status: 429,
    title: 'Too many requests',
    sentence: 'Too many requests. Wait a moment and try again.',
  },
  CONFLICT: {
    status: 409,
    title: 'Conflict',
    sentence: 'Someone else changed this at the same time. Reload the page and try again.',
  },
  ALREADY_EXISTS: {
    status: 409,
    title: 'Already exists',
    sentence: 'A record with this value already exists. Choose another value.',
  },
  // The two refusals an entity's declared state table may answer (EntityDefinition.states.refusal).
  INVALID_STATE: {
    status: 409,
    title: 'Not allowed in the current state',
    sentence: 'This is not possible in the record’s current state.',
    detail: true,
  },
  INVALID_TRANSITION: {
    status: 409,
    title: 'Status change not allowed',
    sentence: 'This step is not possible from the record’s current status.',
    detail: true,
  },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large', sentence: 'What was sent is too large.' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    title: 'Unsupported media type',
    sentence: 'The form could not be read. Reload the page and try again.',
  },
  NOT_READY: {
    status: 503,
    title: 'Not ready',
    sentence: 'The service is starting or unavailable. Try again in a moment.',
  },
  BLOB_MISSING: {
    status: 503,
    title: 'Stored bytes unavailable',
    sentence: 'The file’s contents cannot be read right now. Try again later.',
  },
  STORAGE_UNAVAILABLE: {
    status: 503,
    title: 'File storage unavailable',
    sentence: 'File storage cannot be reached right now. Try again later.',
  },
  STORAGE_FULL: { status: 507, title: 'File storage full', sentence: 'File storage is full. Tell the operator.' },
  DB_BUSY: { status: 503, title: 'Database busy', sentence: 'The service is busy. Try again in a moment.' },
  DB_TIMEOUT: {
    status: 503,
    title: 'Database statement timed out',
    sentence: 'This took too long. Try again in a moment.',
  },
  DB_UNAVAILABLE: {
    status: 503,
    title: 'Database unavailable',
    sentence: 'The database cannot be reached. Try again in a moment.',
  },
  INTERNAL: {
    status: 500,
    title: 'Internal error',
    sentence: 'Something went wrong on our side. It has been logged; try again in a moment.',
  },
} as const satisfies Readonly<Record<string, ProblemDeclaration>>;

declare module './contracts/problems.ts' {
  interface ProblemCodes extends ProblemCodesOf<typeof PROBLEMS> {}
}

export type { FieldError, ProblemCode, ProblemDeclaration, ProblemDocument } from './contracts/problems.ts';

export function problemType(code: ProblemCode): string {
  return `https://tenantry.dev/problems/${code}`;
}

/** Every code the service answers, with who declared it: the framework's own, then the installed modules'. */
const catalogue = new Map<string, { declaration: ProblemDeclaration; owner: string }>(
  Object.entries(PROBLEMS).map(([code, declaration]) => [code, { declaration, owner: 'framework' }]),
);

/**
 * Installs the codes a module declares (ModuleDefinition.problems), once the boot checks have
 * found no code declared twice (framework/composition.ts). The same declaration installed again
 * (another app of the same modules in this process) changes nothing; another declaration of a code
 * is refused.
 */
export function installProblems(owner: string, declared: Readonly<Record<string, ProblemDeclaration>>): void {
  for (const [code, declaration] of Object.entries(declared)) {
    const known = catalogue.get(code);
    if (known && known.declaration !== declaration)
      throw new Error(`problem code ${code} is declared by ${known.owner} and by ${owner}`);
    catalogue.set(code, { declaration, owner });
  }
}

/** What a code means, as its owner declared it; undefined for a code no installed module declares. */
export function problemDeclaration(code: string): ProblemDeclaration | undefined {
  return catalogue.get(code)?.declaration;
}

/** Every installed code and its owner ('framework' or a module's name). */
export function installedProblems(): ReadonlyMap<string, { declaration: ProblemDeclaration; owner: string }> {
  return catalogue;
}

function declared(code: ProblemCode): ProblemDeclaration {
  const declaration = catalogue.get(code)?.declaration;
  if (!declaration)
    throw new Error(`problem code ${code} is declared by no installed module (ModuleDefinition.problems)`);
  return declaration;
}

export class ProblemError extends Error implements Problem {
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly extensions: Record<string, unknown>;

  constructor(
    code: ProblemCode,
    detail?: string,
    options: { errors?: FieldError[]; extensions?: Record<string, unknown> } = {},
  ) {
    const declaration = declared(code);
    super(detail ?? declaration.title);
    this.name = 'ProblemError';
    this.code = code;
    this.status = declaration.status;
    this.errors = options.errors;
    this.extensions = options.extensions ?? {};
  }

  toDocument(): ProblemDocument {
    return {
      type: problemType(this.code),
      title: declared(this.code).title,
      status: this.status,
      detail: this.message,
      code: this.code,
      ...(this.errors ? { errors: this.errors } : {}),
      ...this.extensions,
    };
  }
}

export const problem = (code: ProblemCode, detail?: string, options?: ConstructorParameters<typeof ProblemError>[2]) =>
  new ProblemError(code, detail, options);

export const notFound = (): ProblemError => new ProblemError('NOT_FOUND', 'No such resource');

/**
 * A mistake in the code, not in the request (a command returning values its entity's fields do
 * not admit, a publish of an event outside the declared lists): answered 500 INTERNAL with the
 * generic sentence, and logged in full. Its message names routes, events and fields, which the
 * client never sees.
 */
export class ProgrammingError extends Error {
  override name = 'ProgrammingError';
}
