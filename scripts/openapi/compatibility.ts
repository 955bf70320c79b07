/**
 * Compares two OpenAPI 3.1 documents as served by this project and says what changed for a
 * consumer, and whether that change is breaking. Breaking (docs/api-conventions.md):
 * - a removed operation;
 * - a removed response field, or one no longer always present;
 * - a new required request field or parameter, or a parameter or a field of a closed body removed
 *   (this service refuses what it does not know, so a client still sending it would be refused);
 * - a narrowed type or enum (a type or a value no longer accepted or given);
 * - a changed success status code.
 * Everything else that differs (added operations, fields, error answers, wider request types, the
 * same values written another way, descriptions) is reported as compatible. No maintained library for this installs here, hence this.
 */

/** The accepted document, committed: what the gate compares the served one with. */
export const SNAPSHOT_FILE = 'openapi/snapshot.json';

type Json = Record<string, unknown>;
type Schema = Json;

export interface Change {
  breaking: boolean;
  /** Where: "POST /api/v1/task/tasks 201 body.title". */
  at: string;
  what: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Resolves local #/components/... references, one level at a time, as it walks. */
function resolver(document: Json) {
  return (schema: unknown): Schema => {
    let current = schema;
    for (let depth = 0; isObject(current) && typeof current.$ref === 'string' && depth < 32; depth++) {
      const path = (current.$ref as string).replace(/^#\//, '').split('/');
      current = path.reduce<unknown>(
        (node, key) => (isObject(node) ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined),
        document,
      );
    }
    return isObject(current) ? current : {};
  };
}

/** The JSON types a schema admits (anyOf/oneOf members' included); undefined when it does not say. */
function typesOf(schema: Schema, resolve: (s: unknown) => Schema): Set<string> | undefined {
  const members = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (members) {
    const out = new Set<string>();
    for (const member of members) {
      const types = typesOf(resolve(member), resolve);
      if (!types) return undefined;
      for (const t of types) out.add(t);
    }
    return out;
  }
  if (schema.const !== undefined)
    return new Set([
      schema.const === null ? 'null' : typeof schema.const === 'number' ? 'number' : typeof schema.const,
    ]);
  if (typeof schema.type === 'string') return new Set([schema.type === 'integer' ? 'integer' : schema.type]);
  if (Array.isArray(schema.type)) return new Set(schema.type as string[]);
  // An enum without a type admits the types of its values and nothing else.
  if (Array.isArray(schema.enum)) return new Set(schema.enum.map(jsonType));
  return undefined;
}

/** The JSON type of a value, as a schema's `type` names it. */
function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** How a schema writes its allowed values: one enum (with its type, if stated), or a union of single values. */
function valueForm(schema: Schema): string {
  if (Array.isArray(schema.enum))
    return typeof schema.type === 'string' ? `one enum of type ${schema.type}` : 'one enum';
  return schema.const !== undefined ? 'a constant' : 'a union of single values';
}

/** The values an enum (or const, or a union of them) allows; undefined when any value of the type is. */
function valuesOf(schema: Schema, resolve: (s: unknown) => Schema): Set<string> | undefined {
  if (Array.isArray(schema.enum)) return new Set(schema.enum.map((v) => JSON.stringify(v)));
  if (schema.const !== undefined) return new Set([JSON.stringify(schema.const)]);
  const members = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (!members) return undefined;
  const out = new Set<string>();
  for (const member of members) {
    const resolved = resolve(member);
    if (resolved.type === 'null') {
      out.add('null');
      continue;
    }
    const values = valuesOf(resolved, resolve);
    if (!values) return undefined;
    for (const v of values) out.add(v);
  }
  return out;
}

/** Does `wider` admit every type of `narrower`? (An integer is a number.) */
const admits = (wider: Set<string>, type: string) => wider.has(type) || (type === 'integer' && wider.has('number'));

type Side = 'request' | 'response';

function compareSchemas(
  before: Schema,
  after: Schema,
  at: string,
  side: Side,
  ctx: Context,
  ancestors = new Set<Schema>(),
): void {
  // A recursive schema is compared once along a path.
  if (ancestors.has(before)) return;
  const seen = new Set(ancestors).add(before);
  const oldTypes = typesOf(before, ctx.oldResolve);
  const newTypes = typesOf(after, ctx.newResolve);
  if (oldTypes && newTypes) {
    const lost = [...oldTypes].filter((t) => !admits(newTypes, t));
    if (lost.length) ctx.add(true, at, `narrowed type: ${[...oldTypes].join('|')} → ${[...newTypes].join('|')}`);
    else if ([...newTypes].some((t) => !admits(oldTypes, t)))
      ctx.add(false, at, `wider type: ${[...oldTypes].join('|')} → ${[...newTypes].join('|')}`);
  } else if (oldTypes === undefined && newTypes !== undefined) {
    ctx.add(true, at, `narrowed type: any → ${[...newTypes].join('|')}`);
  }
  const oldValues = valuesOf(before, ctx.oldResolve);
  const newValues = valuesOf(after, ctx.newResolve);
  if (newValues && (!oldValues || [...oldValues].some((v) => !newValues.has(v)))) {
    const removed = oldValues ? [...oldValues].filter((v) => !newValues.has(v)) : ['(any value)'];
    ctx.add(true, at, `narrowed enum: ${removed.join(', ')} no longer ${side === 'request' ? 'accepted' : 'given'}`);
  } else if (oldValues && newValues && [...newValues].some((v) => !oldValues.has(v))) {
    ctx.add(false, at, `enum widened: ${[...newValues].filter((v) => !oldValues.has(v)).join(', ')}`);
  } else if (oldValues && newValues && valueForm(before) !== valueForm(after)) {
    // The same values written another way (anyOf of single values → enum): a consumer meets the same contract.
    ctx.add(false, at, `equivalent enum: the same values, now ${valueForm(after)}`);
  }

  const oldProps = (before.properties ?? {}) as Json;
  const newProps = (after.properties ?? {}) as Json;
  const oldRequired = new Set((before.required ?? []) as string[]);
  const newRequired = new Set((after.required ?? []) as string[]);
  for (const [name, schema] of Object.entries(oldProps)) {
    const field = `${at}.${name}`;
    if (!(name in newProps)) {
      if (side === 'response') ctx.add(true, field, 'removed response field');
      else ctx.add(after.additionalProperties === false, field, 'removed request field');
      continue;
    }
    if (side === 'response' && oldRequired.has(name) && !newRequired.has(name))
      ctx.add(true, field, 'response field no longer always present');
    if (side === 'request' && !oldRequired.has(name) && newRequired.has(name))
      ctx.add(true, field, 'request field now required');
    compareSchemas(ctx.oldResolve(schema), ctx.newResolve(newProps[name]), field, side, ctx, seen);
  }
  for (const name of Object.keys(newProps)) {
    if (name in oldProps) continue;
    if (side === 'request' && newRequired.has(name)) ctx.add(true, `${at}.${name}`, 'new required request field');
    else ctx.add(false, `${at}.${name}`, `new ${side} field`);
  }
  if (before.items !== undefined && after.items !== undefined) {
    compareSchemas(ctx.oldResolve(before.items), ctx.newResolve(after.items), `${at}[]`, side, ctx, seen);
  }
}

interface Context {
  oldResolve: (s: unknown) => Schema;
  newResolve: (s: unknown) => Schema;
  add(breaking: boolean, at: string, what: string): void;
}

const jsonSchemaOf = (content: unknown): unknown =>
  isObject(content) ? (content['application/json'] as Json | undefined)?.schema : undefined;

function operationsOf(document: Json): Map<string, Json> {
  const out = new Map<string, Json>();
  for (const [path, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    for (const method of METHODS)
      if (isObject(item[method])) out.set(`${method.toUpperCase()} ${path}`, item[method] as Json);
  }
  return out;
}

/** Every difference a consumer may notice between the snapshot and the served document. */
export function compareDocuments(before: Json, after: Json): Change[] {
  const changes: Change[] = [];
  const ctx: Context = {
    oldResolve: resolver(before),
    newResolve: resolver(after),
    add: (breaking, at, what) => changes.push({ breaking, at, what }),
  };
  const oldOps = operationsOf(before);
  const newOps = operationsOf(after);
  for (const [key, oldOp] of oldOps) {
    const newOp = newOps.get(key);
    if (!newOp) {
      ctx.add(true, key, 'removed operation');
      continue;
    }
    // Parameters: a new required one, or a narrowed one.
    const params = (op: Json) => new Map(((op.parameters ?? []) as Json[]).map((p) => [`${p.in} ${p.name}`, p]));
    const oldParams = params(oldOp);
    const newParams = params(newOp);
    for (const [name, param] of newParams) {
      const old = oldParams.get(name);
      if (!old && param.required === true) ctx.add(true, `${key} ${name}`, 'new required parameter');
      else if (!old) ctx.add(false, `${key} ${name}`, 'new optional parameter');
      else {
        if (param.required === true && old.required !== true) ctx.add(true, `${key} ${name}`, 'parameter now required');
        compareSchemas(ctx.oldResolve(old.schema), ctx.newResolve(param.schema), `${key} ${name}`, 'request', ctx);
      }
    }
    // Unknown parameters are refused (the query schemas are closed): a client still sending one would be.
    for (const name of oldParams.keys()) if (!newParams.has(name)) ctx.add(true, `${key} ${name}`, 'removed parameter');
    // The request body.
    const oldBody = jsonSchemaOf((oldOp.requestBody as Json | undefined)?.content);
    const newBody = jsonSchemaOf((newOp.requestBody as Json | undefined)?.content);
    if (newBody && !oldBody && (newOp.requestBody as Json).required === true)
      ctx.add(true, `${key} body`, 'new required request body');
    if (oldBody && newBody)
      compareSchemas(ctx.oldResolve(oldBody), ctx.newResolve(newBody), `${key} body`, 'request', ctx);
    // The answers: the success statuses, then each one's shape.
    const oldResponses = (oldOp.responses ?? {}) as Record<string, Json>;
    const newResponses = (newOp.responses ?? {}) as Record<string, Json>;
    const successes = (r: Record<string, Json>) =>
      Object.keys(r)
        .filter((s) => s.startsWith('2'))
        .sort();
    const oldOk = successes(oldResponses);
    const newOk = successes(newResponses);
    if (oldOk.join() !== newOk.join())
      ctx.add(true, key, `changed status code: ${oldOk.join('/')} → ${newOk.join('/')}`);
    for (const status of Object.keys(newResponses))
      if (!status.startsWith('2') && !oldResponses[status]) ctx.add(false, `${key} ${status}`, 'new error answer');
    for (const status of oldOk) {
      const oldSchema = jsonSchemaOf(oldResponses[status]?.content);
      const newSchema = jsonSchemaOf(newResponses[status]?.content);
      if (oldSchema && newSchema)
        compareSchemas(ctx.oldResolve(oldSchema), ctx.newResolve(newSchema), `${key} ${status}`, 'response', ctx);
    }
  }
  for (const key of newOps.keys()) if (!oldOps.has(key)) ctx.add(false, key, 'new operation');
  return changes;
}

export interface GateVerdict {
  pass: boolean;
  breaking: boolean;
  changes: Change[];
  report: string;
}

/**
 * The gate: the served document must equal the accepted snapshot (servers aside: they name the
 * installation's host, not the contract). When it does not, the verdict lists the changes and says
 * whether any is breaking.
 */
export function gate(snapshot: Json, served: Json, snapshotFile = SNAPSHOT_FILE): GateVerdict {
  const { servers: _a, ...accepted } = snapshot;
  const { servers: _b, ...current } = served;
  if (JSON.stringify(canonical(accepted)) === JSON.stringify(canonical(current)))
    return { pass: true, breaking: false, changes: [], report: '' };
  const changes = compareDocuments(snapshot, served);
  const breaking = changes.some((c) => c.breaking);
  const report = [
    `The served OpenAPI document differs from ${snapshotFile}: ${breaking ? 'BREAKING for published clients (allowed only under a new version prefix, docs/api-conventions.md)' : 'compatible'}.`,
    changes.length ? describeChanges(changes) : 'compatible  (descriptions, summaries or other text only)',
    'When the change is intended: npm run openapi:accept, and commit the snapshot.',
  ].join('\n');
  return { pass: false, breaking, changes, report };
}

/** The same JSON with its object keys sorted, so that key order is no difference. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, canonical(value[k])]),
  );
}

/** What the gate says: nothing changed, or each change, breaking ones first. */
export function describeChanges(changes: readonly Change[]): string {
  const sorted = [...changes].sort((a, b) => Number(b.breaking) - Number(a.breaking));
  return sorted.map((c) => `${c.breaking ? 'BREAKING' : 'compatible'}  ${c.at}: ${c.what}`).join('\n');
}
