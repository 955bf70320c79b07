import { entityNames, titleCase } from '../../framework/entity/names.ts';

/** The names a scaffolded module is written with. */
export interface ScaffoldNames {
  module: string;
  entity: string;
  /** The module's export, e.g. `inventoryModule`. */
  moduleExport: string;
  /** The entity's export, e.g. `item`; its fields' export `itemFields`. */
  entityExport: string;
  fieldsExport: string;
  /** The table type's name, e.g. `ItemsTable`. */
  tableType: string;
  table: string;
  plural: string;
  path: string;
  adminPath: string;
  label: string;
}

const NAME = /^[a-z][a-z0-9]{1,39}$/;
const RESERVED = new Set(['framework', 'admin', 'api', 'testkit', 'health', 'ready']);

const pascal = (s: string) => s.replace(/^./, (c) => c.toUpperCase());

export function scaffoldNames(module: string, entity: string): ScaffoldNames {
  for (const [what, name] of [
    ['module', module],
    ['entity', entity],
  ] as const) {
    if (!NAME.test(name))
      throw new Error(
        `the ${what} name must be 2 to 40 lower-case letters and digits, starting with a letter (got ${JSON.stringify(name)})`,
      );
  }
  if (RESERVED.has(module)) throw new Error(`${module} is reserved: choose another module name`);
  const names = entityNames({ module, name: entity });
  return {
    module,
    entity,
    moduleExport: `${module}Module`,
    entityExport: entity,
    fieldsExport: `${entity}Fields`,
    tableType: `${pascal(names.plural)}Table`,
    table: names.table,
    plural: names.plural,
    path: names.path,
    adminPath: names.adminPath,
    label: names.label,
  };
}

/** The module's files, path (from the repository root) → text: the module, its entity, its table type and a test. */
export function scaffoldFiles(n: ScaffoldNames): Record<string, string> {
  const dir = `modules/${n.module}`;
  const lower = n.label.toLowerCase();
  const lowerPlural = titleCase(n.plural).toLowerCase();
  return {
    [`${dir}/index.ts`]: `import { defineModule, entity } from '../../framework/entity/define.ts';
import { ${n.entityExport} } from './${n.entity}.entity.ts';
import './${n.plural}-table.ts';

/** ${titleCase(n.module)}: ${lowerPlural}. Scaffolded by \`npm run new:module\`: say here what the module is for. */
export const ${n.moduleExport} = defineModule({
  name: '${n.module}',
  description: '${titleCase(n.plural)} with a name, a quantity and an archive command.',
  permissions: [
    { name: '${n.module}:read', description: 'Read ${lowerPlural}' },
    { name: '${n.module}:write', description: 'Create, change, archive and delete ${lowerPlural}' },
  ],
  // Its events are what its publishes lists name (${n.module}.${n.entity}.archived): no list of them here.
  entities: [entity(${n.entityExport})],
  admin: {
    label: '${titleCase(n.module)}',
    // The shell's sidebar entry, for those who may read the ${lowerPlural}.
    sidebar: [{ label: '${titleCase(n.plural)}', path: '${n.adminPath}', order: 100 }],
  },
});
`,
    [`${dir}/${n.entity}.fields.ts`]: `import Type from 'typebox';
import { DateTime } from '../../framework/entity/date-time.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

/** The fields of a ${lower}: the request, response and OpenAPI schemas, the columns and the query types. */
export const ${n.fieldsExport} = {
  name: Type.String({ minLength: 1, maxLength: 100, description: 'What the ${lower} is called; unique in the tenant.' }),
  quantity: Type.Integer({ minimum: 0, maximum: 1000000, description: 'How many there are.' }),
  notes: Type.Optional(Type.String({ maxLength: 2000, description: 'Free text.' })),
  dueAt: Type.Optional(DateTime({ description: 'When it is due, if ever.' })),
  status: WithDefault(
    StringEnum(['active', 'archived'], { description: 'active, or archived by POST .../{id}/archive.' }),
    'active',
  ),
};

export type ${pascal(n.entity)}Fields = typeof ${n.fieldsExport};

/** What people read in the admin shell beside each field (the API's descriptions are for developers). */
export const ${n.entity}FieldText = {
  name: { label: 'Name', hint: 'Unique among the ${lowerPlural} of the organisation.' },
  quantity: { label: 'Quantity', hint: 'How many there are, from 0 to 1,000,000.' },
  notes: { label: 'Notes', hint: 'Anything worth knowing about it.' },
  dueAt: { label: 'Due', hint: 'When it is due, if ever.' },
  status: { label: 'Status', hint: 'Active, or archived with the Archive button.' },
};
`,
    [`${dir}/${n.entity}.entity.ts`]: `import { defineCommand, defineEntity } from '../../framework/entity/define.ts';
import { ${n.entity}FieldText, ${n.fieldsExport} } from './${n.entity}.fields.ts';

/**
 * A ${lower}: served at ${n.path} (list, create, read, PATCH, DELETE and POST .../{id}/archive;
 * GET .../{id}/history and POST .../{id}/restore, POST ${n.path}/import and GET ${n.path}/stream
 * come with every tenant collection), in the OpenAPI document, the catalog and the admin shell
 * (${n.adminPath}). A field naming another entity's row is declared in admin.references (e.g.
 * \`ownerId: 'user.user'\`): its migration then has the composite foreign key within the tenant.
 * Change the fields here, then run \`npm run migration:new -- ${n.module} <change>\` and read the
 * migration it writes.
 */
export const ${n.entityExport} = defineEntity({
  module: '${n.module}',
  name: '${n.entity}',
  description: '${titleCase(n.plural)} of a tenant, each with a name unique in the tenant.',
  fields: ${n.fieldsExport},
  commandOwned: { status: 'archive' },
  permissions: { read: '${n.module}:read', write: '${n.module}:write' },
  sortable: ['name', 'quantity', 'dueAt'],
  // The unique key and the sentence its 409 says, declared once.
  storage: { unique: [{ field: 'name', message: '${article(lower)} ${lower} with this name already exists' }] },
  commands: {
    archive: defineCommand(${n.fieldsExport})({
      summary: 'Archive a ${lower}',
      publishes: ['${n.module}.${n.entity}.archived'],
      async run(ctx, row) {
        if (row.status === 'archived') return;
        ctx.publish('${n.module}.${n.entity}.archived', { id: row.id });
        return { status: 'archived' };
      },
    }),
  },
  admin: { title: 'name', columns: ['name', 'quantity', 'status', 'dueAt'], fieldText: ${n.entity}FieldText },
});
`,
    [`${dir}/${n.plural}-table.ts`]: `import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { ${pascal(n.entity)}Fields } from './${n.entity}.fields.ts';

/** The ${n.table} table, for typed queries outside the generic operations: derived from the fields. */
export type ${n.tableType} = EntityTable<${pascal(n.entity)}Fields>;

declare module '../../framework/contracts/database.ts' {
  interface Database {
    ${n.table}: ${n.tableType};
  }
}
`,
    [`test/modules/${n.module}/${n.entity}.test.ts`]: `import { beforeAll, describe, expect, it } from 'vitest';
import Value from 'typebox/value';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { appSamples } from '../../helpers/samples/app-samples.ts';
import { commandOutcome, uniqueFields } from '../../helpers/samples/derive.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { Registry } from '../../../framework/entity/registry.ts';
import { allModules } from '../../../modules/index.ts';
import { ${n.moduleExport} } from '../../../modules/${n.module}/index.ts';

// Served whether or not it is registered in modules/index.ts yet. The conformance suite
// (test/conformance/entities.test.ts) holds the entity to the common contract once it is.
const modules = allModules.includes(${n.moduleExport}) ? allModules : [...allModules, ${n.moduleExport}];
const ENTITIES = new Registry(modules, testConfig()).entities;
const entity = ENTITIES.find((e) => e.names.key === '${n.module}.${n.entity}')!;
const { def, names } = entity;

// What these tests send and expect is derived from the entity's declarations (its fields, its
// references, unique keys, states and commands: test/helpers/samples/derive.ts), so they keep
// passing as you reshape the entity. Add beside them the tests of what is particular to it: what a
// hook does, what a command changes.
const t = useTestApp({ modules, customers: ['${n.module}-test'] });
const samples = appSamples(() => t.app, ENTITIES);
const http = () => t.app.http('${n.module}-test.localhost');
let caller: SignedIn;

beforeAll(async () => {
  const commandPermissions = Object.values(def.commands ?? {}).map((c) => c.permission ?? def.permissions.write);
  const permissions = [...new Set([def.permissions.read, def.permissions.write, ...commandPermissions])];
  caller = await signInAs(t.app, t['${n.module}-test'], permissions);
});

/** Creates a row from a derived body: the body sent and the row answered. */
async function create(given: Record<string, unknown> = {}) {
  const body = { ...(await samples.createBody(entity, t['${n.module}-test'], caller)), ...given };
  const res = await http().post(names.path).set('Cookie', caller.cookie).send(body);
  return { body, res };
}

describe('${n.module}.${n.entity}', () => {
  it('is created as sent, read back and listed', async () => {
    const { body, res } = await create();
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(Value.Check(entity.schemas.row, res.body), JSON.stringify([...Value.Errors(entity.schemas.row, res.body)])).toBe(true);
    const shown = (entity.schemas.row as { properties: Record<string, unknown> }).properties;
    expect(res.body).toMatchObject(Object.fromEntries(Object.entries(body).filter(([field]) => field in shown)));

    const read = await http().get(\`\${names.path}/\${res.body.id}\`).set('Cookie', caller.cookie).expect(200);
    expect(read.body).toEqual(res.body);
    const list = await http().get(names.path).set('Cookie', caller.cookie).expect(200);
    expect(list.body.items.map((row: { id: string }) => row.id)).toContain(res.body.id);
  });

  for (const { field, code } of uniqueFields(entity)) {
    const declared = def.storage?.unique?.find((u) => typeof u !== 'string' && u.field === field);
    const message = typeof declared === 'object' ? declared.message : undefined;
    it(\`refuses a second \${names.label.toLowerCase()} with the same \${field} (409 \${code})\`, async () => {
      const first = await create();
      expect(first.res.status, JSON.stringify(first.res.body)).toBe(201);
      const again = await create({ [field]: first.body[field] });
      expect(again.res.status, JSON.stringify(again.res.body)).toBe(409);
      expect(again.res.body).toMatchObject({ code, ...(message ? { field, detail: message } : {}) });
    });
  }

  for (const command of Object.keys(def.commands ?? {})) {
    it(\`answers its \${command} command on a new \${names.label.toLowerCase()} as its states declare\`, async () => {
      const { res: created } = await create();
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const row = created.body as Record<string, unknown>;
      const body = await samples.commandBody(entity, command, t['${n.module}-test'], caller, row);
      const sent = http().post(\`\${names.path}/\${row.id}/\${command}\`).set('Cookie', caller.cookie);
      const res = body ? await sent.send(body) : await sent;
      const outcome = commandOutcome(entity, command, row);
      if (outcome === 'success') {
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const to = def.commands?.[command]?.states?.to;
        if (to && def.states) expect(res.body[def.states.field]).toBe(to);
      } else {
        expect(res.status, JSON.stringify(res.body)).toBe(outcome.status);
        expect(res.body.code).toBe(outcome.code);
      }
    });
  }

  it('is in the OpenAPI document, the catalog and the admin shell', async () => {
    const openapi = await http().get('/api/v1/openapi.json').expect(200);
    const operations = Object.values(openapi.body.paths as Record<string, Record<string, { operationId: string }>>).flatMap((p) => Object.values(p).map((o) => o.operationId));
    expect(operations).toEqual(expect.arrayContaining(entity.endpoints.map((e) => names.operationId(e.verb))));

    const catalog = await http().get('/api/v1/admin/resources').set('Cookie', caller.cookie).expect(200);
    expect(JSON.stringify(catalog.body)).toContain(names.path);

    const page = await http().get(names.adminPath).set('Cookie', caller.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain(names.labelPlural);
  });
});
`,
  };
}

/** The article before a noun as written: An item, A widget. */
const article = (noun: string): string => (/^[aeiou]/i.test(noun) ? 'An' : 'A');

/** What registering the module takes: one entry in modules/index.ts, with its import. */
export function registration(n: ScaffoldNames): { importLine: string; entry: string } {
  return { importLine: `import { ${n.moduleExport} } from './${n.module}/index.ts';`, entry: n.moduleExport };
}
