/**
 * The one registry of problem codes. Every failure the service answers is a ProblemError
 * carrying one of these codes; the HTTP layer turns it into application/problem+json.
 */
export const PROBLEMS = {
  NO_SITE: { status: 404, title: 'No site' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed request' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout' },
  LENGTH_REQUIRED: { status: 411, title: 'Length required' },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition failed' },
  URI_TOO_LONG: { status: 414, title: 'URI too long' },
  RANGE_NOT_SATISFIABLE: { status: 416, title: 'Range not satisfiable' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large' },
  VALIDATION_FAILED: { status: 422, title: 'Validation failed' },
  FIELD_COMMAND_OWNED: { status: 422, title: 'Field is owned by a command' },
  FIELD_IMMUTABLE: { status: 422, title: 'Field is immutable' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency key used for another request' },
  BATCH_REQUEST_UNSUPPORTED: { status: 422, title: 'Request cannot be part of a batch' },
  IMPORT_FORMAT_UNKNOWN: { status: 422, title: 'Upload neither CSV nor NDJSON' },
  IMPORT_COLUMNS_UNKNOWN: { status: 422, title: 'CSV header names no field' },
  IMPORT_UNREADABLE: { status: 422, title: 'Upload cannot be read' },
  AUTH_REQUIRED: { status: 401, title: 'Sign-in required' },
  AUTH_FORBIDDEN: { status: 403, title: 'Permission denied' },
  AUTH_NOT_OPERATOR: { status: 403, title: 'Operator permission outside the operator tenant' },
  AUTH_CROSS_SITE: { status: 403, title: 'Cross-site request refused' },
  USE_PASSWORD_CHANGE: { status: 403, title: 'Own password: change it with the current one' },
  ErrCredentials: { status: 401, title: 'Invalid credentials' },
  ErrTooManyAttempts: { status: 429, title: 'Too many attempts' },
  TOKEN_INVALID: { status: 401, title: 'Invalid or expired token' },
  TOKEN_EXPIRY_TOO_LONG: { status: 422, title: 'Access token expiry beyond the longest allowed' },
  TOKEN_PERMISSION_NOT_HELD: { status: 403, title: 'Access token permission the caller does not hold' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  CONFLICT: { status: 409, title: 'Conflict' },
  ALREADY_EXISTS: { status: 409, title: 'Already exists' },
  INVALID_STATE: { status: 409, title: 'Not allowed in the current state' },
  INVALID_TRANSITION: { status: 409, title: 'Status change not allowed' },
  SLUG_INVALID: { status: 422, title: 'Slug outside the slug grammar' },
  SLUG_TAKEN: { status: 409, title: 'Slug already used' },
  PLAN_IN_USE: { status: 409, title: 'Plan still subscribed' },
  LAST_ADMINISTRATOR: { status: 409, title: 'Last administrator' },
  LIMIT_REACHED: { status: 409, title: 'Limit reached' },
  PERIOD_OWED: { status: 409, title: 'A period is owed for' },
  PAYMENT_DECLINED: { status: 402, title: 'Payment declined' },
  PERMISSION_UNKNOWN: { status: 422, title: 'Unknown permission' },
  PERMISSION_OPERATOR_ONLY: { status: 422, title: 'Operator permission in a customer role' },
  ROLE_UNKNOWN: { status: 422, title: 'Unknown role' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  FILE_TOO_LARGE: { status: 413, title: 'File larger than the upload limit' },
  QUOTA_EXCEEDED: { status: 413, title: "File past the tenant's storage quota" },
  FILE_MISSING: { status: 422, title: 'The form has no file part' },
  MEDIA_TYPE_INVALID: { status: 422, title: 'Invalid media type' },
  MEDIA_TYPE_MISMATCH: { status: 422, title: 'The bytes disagree with the media type' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  OIDC_STATE_INVALID: { status: 400, title: 'Single sign-on state missing, tampered or expired' },
  OIDC_REFUSED: { status: 401, title: 'Single sign-on refused' },
  OIDC_ISSUER_UNAVAILABLE: { status: 502, title: 'Identity provider unavailable' },
  NOT_READY: { status: 503, title: 'Not ready' },
  BLOB_MISSING: { status: 503, title: 'Stored bytes unavailable' },
  STORAGE_UNAVAILABLE: { status: 503, title: 'File storage unavailable' },
  STORAGE_FULL: { status: 507, title: 'File storage full' },
  DB_BUSY: { status: 503, title: 'Database busy' },
  DB_TIMEOUT: { status: 503, title: 'Database statement timed out' },
  DB_UNAVAILABLE: { status: 503, title: 'Database unavailable' },
  INTERNAL: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

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

export function problemType(code: ProblemCode): string {
  return `https://tenantry.dev/problems/${code}`;
}

export class ProblemError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly extensions: Record<string, unknown>;

  constructor(
    code: ProblemCode,
    detail?: string,
    options: { errors?: FieldError[]; extensions?: Record<string, unknown> } = {},
  ) {
    super(detail ?? PROBLEMS[code].title);
    this.name = 'ProblemError';
    this.code = code;
    this.status = PROBLEMS[code].status;
    this.errors = options.errors;
    this.extensions = options.extensions ?? {};
  }

  toDocument(): ProblemDocument {
    return {
      type: problemType(this.code),
      title: PROBLEMS[this.code].title,
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
