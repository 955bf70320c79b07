import Type, { type Static } from 'typebox';

/**
 * The shape of config.yaml. Every key has a default so a minimal file works;
 * cross-key rules (all-or-none, path prefixes) live in validate.ts.
 */
export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ default: '127.0.0.1', minLength: 1 }),
        port: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
        public_host: Type.String({ default: 'localhost', minLength: 1 }),
        /**
         * Which peers may set X-Forwarded-For (the client address that rate limits count):
         * "loopback" (a proxy on this machine), a comma-separated list of addresses/CIDRs,
         * "true" (any peer: only behind a proxy that overwrites the header), or "false" (none).
         */
        trust_proxy: Type.String({ default: 'loopback' }),
        /**
         * Web origins (scheme://host[:port], comma-separated) whose pages may call the API of every
         * tenant with a personal access token (CORS, framework/http/cors.ts); a tenant lists its own
         * too. Empty: none but each tenant's own.
         */
        cors_origins: Type.String({ default: '' }),
        log_level: Type.Union(
          ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
          { default: 'info' },
        ),
        /** json: one JSON object per line; pretty: pino-pretty's coloured lines. Empty: pretty on a terminal, JSON otherwise. */
        log_format: Type.Union([Type.Literal(''), Type.Literal('json'), Type.Literal('pretty')], { default: '' }),
      },
      { additionalProperties: false, default: {} },
    ),
    database: Type.Object(
      {
        url: Type.String({ default: '' }),
        /**
         * What needs a session of its own (the LISTEN connections, pg-boss, migrations, the operator
         * commands) connects here: PostgreSQL itself when database.url is a pooler in transaction mode.
         * Empty: database.url.
         */
        direct_url: Type.String({ default: '' }),
        /**
         * named: the request path's fixed statements run as prepared statements named by their text's
         * hash. unnamed: every statement is sent unnamed (parsed on each run), for a pooler that does
         * not support prepared statements at the protocol level (PgBouncer before 1.21).
         */
        prepared_statements: Type.Union([Type.Literal('named'), Type.Literal('unnamed')], { default: 'named' }),
        /**
         * A streaming replica of database.url's PostgreSQL, for the reads that may lag (public
         * content reads; lists and reads by id when the caller sends Prefer: replica). Empty: none.
         */
        replica_url: Type.String({ default: '' }),
        /** Past this replay lag (checked once a second) reads that could go to the replica go to the primary. */
        replica_max_lag_ms: Type.Integer({ default: 5000, minimum: 0, maximum: 3600000 }),
        pool_size: Type.Integer({ default: 10, minimum: 1, maximum: 200 }),
        /** How long a request waits for a free connection before it answers 503 DB_BUSY. */
        acquire_timeout_ms: Type.Integer({ default: 3000, minimum: 1, maximum: 60000 }),
        /** PostgreSQL cancels any statement of the service's pool running longer (503 DB_TIMEOUT, the transaction rolled back). */
        statement_timeout_ms: Type.Integer({ default: 5000, minimum: 1, maximum: 3600000 }),
        embedded_dir: Type.String({ default: 'data/postgres', minLength: 1 }),
        embedded_port: Type.Integer({ default: 5488, minimum: 1, maximum: 65535 }),
        /** Development: an applied migration changed or removed is accepted (its new checksum recorded) instead of refusing the start. */
        allow_changed_migrations: Type.Boolean({ default: false }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** The Prometheus listener (docs/observability.md): off unless a port is given. */
    metrics: Type.Object(
      {
        /** Empty or 0: no metrics listener. */
        port: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Literal(''), Type.Null()], {
          default: '',
        }),
        host: Type.String({ default: '127.0.0.1', minLength: 1 }),
      },
      { additionalProperties: false, default: {} },
    ),
    auth: Type.Object(
      {
        oidc: Type.Object(
          {
            issuer: Type.String({ default: '' }),
            client_id: Type.String({ default: '' }),
            client_secret: Type.String({ default: '' }),
            redirect_path: Type.String({ default: '/api/v1/auth/oidc/callback' }),
          },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    files: Type.Object(
      {
        dir: Type.String({ default: 'data/files', minLength: 1 }),
        max_bytes: Type.Integer({ default: 26214400, minimum: 1 }),
        quota_bytes: Type.Integer({ default: 10737418240, minimum: 0 }),
        /** Where the bytes live: local (under files.dir) or s3 (a bucket of S3 or an S3-compatible store). */
        storage: Type.Union([Type.Literal('local'), Type.Literal('s3')], { default: 'local' }),
        /** files.storage s3. Credentials come from the AWS SDK's own chain (AWS_ACCESS_KEY_ID, profiles, roles), never from here. */
        s3: Type.Object(
          {
            bucket: Type.String({ default: '' }),
            /** Empty: the SDK's own (AWS_REGION, the profile). */
            region: Type.String({ default: '' }),
            /** Empty: AWS. An http(s) URL for MinIO, R2 and other S3-compatible stores. */
            endpoint: Type.String({ default: '' }),
            force_path_style: Type.Boolean({ default: false }),
            /** Prepended to every object key (e.g. tenantry/); the service lists and removes only under it. */
            prefix: Type.String({ default: '' }),
          },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    billing: Type.Object(
      {
        /** Days of the one trial a tenant gets on its first paid subscription; 0 disables trials. */
        trial_days: Type.Integer({ default: 14, minimum: 0, maximum: 365 }),
        /** The payment provider: sandbox (built in) keeps its charges in the database. */
        provider: Type.Union([Type.Literal('sandbox')], { default: 'sandbox' }),
        sandbox: Type.Object(
          {
            /** What the sandbox does with a new charge (a replayed idempotency key keeps its first outcome). */
            outcome: Type.Union(
              ['settle', 'decline', 'error'].map((o) => Type.Literal(o)),
              { default: 'settle' },
            ),
          },
          { additionalProperties: false, default: {} },
        ),
        /**
         * What a tenant with no subscription (or a cancelled one), and the operator tenant, are
         * entitled to (docs/billing.md, "Entitlements"): `features` a list of declared feature
         * names or ['*'] for every one; `limits` declared limit → value, a limit left out has no
         * bound. The default, every feature and no limit, is an installation without plans.
         */
        default_entitlements: Type.Object(
          {
            features: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { default: ['*'], maxItems: 200 }),
            limits: Type.Record(Type.String({ minLength: 1, maxLength: 100 }), Type.Integer({ minimum: 0 }), {
              default: {},
            }),
          },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Outgoing webhooks (docs/webhooks.md). */
    webhooks: Type.Object(
      {
        /** Endpoints may be plain http:// URLs (else https only). */
        allow_http: Type.Boolean({ default: false }),
        /** Deliveries may reach loopback, private, link-local and metadata addresses (tests, on-premise receivers). */
        allow_private_networks: Type.Boolean({ default: false }),
        /** The first retry's delay, doubling after each failure up to an hour (whole seconds: rounded, at least 1 s). */
        retry_base_ms: Type.Integer({ default: 5000, minimum: 1, maximum: 3600000 }),
        /** Live endpoints one tenant may have: a create past it is 409 LIMIT_REACHED. */
        max_endpoints_per_tenant: Type.Integer({ default: 20, minimum: 1, maximum: 10000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    mail: Type.Object(
      {
        host: Type.String({ default: '' }),
        port: Type.Integer({ default: 587, minimum: 1, maximum: 65535 }),
        username: Type.String({ default: '' }),
        password: Type.String({ default: '' }),
        from: Type.String({ default: 'Tenantry <no-reply@localhost>', minLength: 3 }),
        secure: Type.Boolean({ default: false }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** pg-boss in the worker role: when a delivery whose worker died is given up and retried. */
    worker: Type.Object(
      {
        /** A subscription's delivery still active after this long counts as failed and is retried (its worker was killed). */
        delivery_expire_seconds: Type.Integer({ default: 900, minimum: 1, maximum: 86400 }),
        /** How often pg-boss looks for expired deliveries (and does its other upkeep). */
        supervise_interval_seconds: Type.Integer({ default: 60, minimum: 1, maximum: 3600 }),
        /** How long the outbox relay, woken by a commit, waits for more commits before its pass (0: none). */
        relay_commit_wait_ms: Type.Integer({ default: 10, minimum: 0, maximum: 1000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Lists followed as server-sent event streams (docs/api-conventions.md, "Live changes"). */
    live: Type.Object(
      {
        /**
         * How far back a stream that reconnects with Last-Event-ID is replayed; an older position
         * gets one reset event. The outbox keeps relayed events at least this long (and an hour).
         */
        replay_minutes: Type.Integer({ default: 60, minimum: 1, maximum: 10080 }),
        /** Streams one session or personal access token may hold open on one web process; past it 429. */
        max_streams_per_caller: Type.Integer({ default: 10, minimum: 1, maximum: 1000 }),
        /** Streams one web process holds open; past it 429. */
        max_streams: Type.Integer({ default: 10000, minimum: 1, maximum: 1000000 }),
        /**
         * Distinct filters the open streams of one tenant may hold on one web process: each is
         * evaluated in the tenant's one batch statement, whose parameters PostgreSQL bounds
         * (65,535; a filter carries at most about 40). Past it a stream with another filter is 429.
         */
        max_filters_per_tenant: Type.Integer({ default: 1000, minimum: 1, maximum: 1500 }),
        /** Bytes a stream may have written that its client has not read; past it the stream is dropped. */
        max_buffer_bytes: Type.Integer({ default: 1048576, minimum: 1024, maximum: 268435456 }),
        /** Seconds between two heartbeat comments on a quiet stream. */
        heartbeat_seconds: Type.Integer({ default: 15, minimum: 1, maximum: 300 }),
        /** At most this many seconds between two checks of an open stream's caller, when no change comes sooner. */
        recheck_seconds: Type.Integer({ default: 15, minimum: 1, maximum: 30 }),
        /**
         * A tenant's batches start at most once per this many milliseconds: changes that arrive
         * sooner after its last batch are gathered into its next one (one statement, one write per
         * stream), at most this much later. A change to a quiet tenant goes out at once. 0: a batch
         * per notification.
         */
        batch_interval_ms: Type.Integer({ default: 100, minimum: 0, maximum: 1000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** History (docs/history.md): the revisions kept of every record. */
    history: Type.Object(
      {
        /** Revisions older than this many days are deleted by the daily framework job history-retention. */
        retention_days: Type.Integer({ default: 365, minimum: 1, maximum: 36500 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Public pages (GET /p/<slug>, docs/content.md) from the installation's own templates. */
    templates: Type.Object(
      {
        /**
         * A directory of eta templates that replace the shipped ones (templates/) of the same
         * name, e.g. <dir>/content/public-page.eta. Empty: the shipped templates alone.
         */
        dir: Type.String({ default: '' }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
