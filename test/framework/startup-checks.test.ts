import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import pg from 'pg';
import { buildApp, type Role } from '../../framework/app.ts';
import { compose } from '../../framework/composition.ts';
import { BootCheckError } from '../../framework/entity/checks.ts';
import {
  defineEntity,
  defineModule,
  defineRoute,
  entity,
  type ModuleDefinition,
} from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { userModule } from '../../modules/user/index.ts';
import { taskModule } from '../../modules/task/index.ts';
import { gadget, setting, testkitModule, widget } from '../helpers/testkit-module.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';
import { Money } from '../../framework/entity/money.ts';
import { Secret } from '../../framework/entity/secret-field.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';

// The test kit's memo references user.user: the user module is registered beside it.
const config = testConfig();
const ROLES: Role[] = ['web', 'worker', 'all'];
let databaseUrl: string;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
});

const ok = defineRoute({
  method: 'GET',
  url: '/api/v1/bad/thing',
  operationId: 'bad-thing-read',
  summary: 'A route',
  access: 'signedIn',
  schema: { response: { 200: Type.Object({}) } },
  handler: async () => ({}),
});

/** A module whose only flaw is what the test puts into it. */
const bad = (extra: Partial<ModuleDefinition>): ModuleDefinition => defineModule({ name: 'bad', ...extra });

async function expectRefusal(modules: readonly ModuleDefinition[], offender: RegExp): Promise<void> {
  expect(() => compose(modules, config)).toThrow(offender);
  for (const role of ROLES) {
    const start = buildApp({ config, modules, databaseUrl, role, startWorker: true, scheduleJobs: true });
    await expect(start, role).rejects.toBeInstanceOf(BootCheckError);
    await expect(start, role).rejects.toThrow(offender);
  }
  // Refused before anything ran: not even the migrations touched the database.
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(`select to_regclass('migration_history') as t`);
    expect(rows[0].t).toBeNull();
  } finally {
    await client.end();
  }
}

describe('startup checks, in every role', () => {
  it("accept the installation's modules with the test kit", () => {
    expect(() => compose([...allModules, testkitModule], config)).not.toThrow();
  });

  it('refuse a route guarded by a permission no module declares, naming route and permission', async () => {
    const route = { ...ok, access: { permission: 'thing:frobnicate' } };
    await expectRefusal(
      [...allModules, bad({ routes: [route] })],
      /route GET \/api\/v1\/bad\/thing \(module bad\) uses undeclared permission thing:frobnicate/,
    );
  });

  it('refuse an entity or a command using an undeclared permission', async () => {
    const thing = defineEntity({
      ...widget,
      module: 'bad',
      permissions: { read: 'widget:read', write: 'thing:write' },
    });
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(thing)] })],
      /entity bad\.widget uses undeclared permission thing:write/,
    );
    const commanded = defineEntity({
      ...widget,
      module: 'bad',
      commands: { approve: { ...widget.commands!.approve, permission: 'thing:approve' } },
    });
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(commanded)] })],
      /POST \/api\/v1\/bad\/widgets\/:id\/approve \(module bad\) uses undeclared permission thing:approve/,
    );
  });

  // Since issue 50 (point 3) a publishes list declares the events it names under its own module's
  // name: an undeclared one is another module's name that no module declares.
  it('refuse a route or a command publishing an undeclared event, naming it', async () => {
    await expectRefusal(
      [bad({ routes: [{ ...ok, publishes: ['elsewhere.thing.exploded'] }] })],
      /publishes undeclared event elsewhere\.thing\.exploded/,
    );
    const commanded = defineEntity({
      ...widget,
      module: 'bad',
      commands: { approve: { ...widget.commands!.approve, publishes: ['elsewhere.widget.blessed'] } },
    });
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(commanded)] })],
      /approve \(module bad\) publishes undeclared event elsewhere\.widget\.blessed/,
    );
  });

  it('refuse a subscription to an undeclared event, naming subscription and event', async () => {
    const subscription = { name: 'bad-listener', event: 'bad.thing.happened', handle: async () => {} };
    await expectRefusal(
      [bad({ subscriptions: [subscription] })],
      /subscription bad-listener \(module bad\) listens to undeclared event bad\.thing\.happened/,
    );
  });

  it('refuse a duplicate operation id, naming both routes', async () => {
    const twin = { ...ok, url: '/api/v1/bad/twin' };
    await expectRefusal(
      [bad({ routes: [ok, twin] })],
      /operation id bad-thing-read is used by GET \/api\/v1\/bad\/thing \(module bad\) and GET \/api\/v1\/bad\/twin \(module bad\)/,
    );
    // A hand-written route colliding with a generated one.
    const clash = { ...ok, url: '/api/v1/testkit/special', operationId: 'testkit-widget-list' };
    await expectRefusal([{ ...testkitModule, routes: [clash] }], /operation id testkit-widget-list is used by/);
  });

  it('refuse a command-owned field whose command is not declared, naming entity, field and command', async () => {
    // The types refuse this too; a definition that slips past them is still caught at boot.
    const unowned = { ...widget, module: 'bad', commandOwned: { approved: 'approve', approvedAt: 'stamp' } } as never;
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(unowned)] })],
      /entity bad\.widget: field approvedAt is owned by command stamp, which is not declared/,
    );
    // A field written by several commands: each one must be declared.
    const shared = {
      ...widget,
      module: 'bad',
      commandOwned: { approved: ['approve', 'revoke'], approvedAt: 'approve' },
    } as never;
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(shared)] })],
      /entity bad\.widget: field approved is owned by command revoke, which is not declared/,
    );
  });

  it('refuse unknown fields in immutable, sortable and admin hints', async () => {
    const broken = {
      ...widget,
      module: 'bad',
      immutable: ['shade'],
      sortable: ['weight'],
      admin: { title: 'label', columns: [] },
    } as never;
    const start = () => compose([userModule, testkitModule, bad({ entities: [entity(broken)] })], config);
    expect(start).toThrow(/immutable field shade is not a field/);
    expect(start).toThrow(/sortable field weight is not a field/);
    expect(start).toThrow(/admin column field label is not a field/);
  });

  it('refuse two modules that both name the signed-in person in the admin header', async () => {
    const namer = { find: async () => null };
    await expectRefusal(
      [...allModules, bad({ adminPerson: namer })],
      /modules user and bad both provide adminPerson: at most one may/,
    );
  });

  it('refuse amounts and overdue rows declared on what the entity cannot hold', () => {
    const broken = {
      ...widget,
      module: 'bad',
      // A Money field whose currency field is missing, another's that is no Currency().
      fields: {
        ...widget.fields,
        price: Money({ currency: 'currency' }),
        cost: Money({ currency: 'color' }),
      },
      admin: {
        title: 'name',
        columns: ['name'],
        overdue: { field: 'name', except: ['done'] },
      },
    } as never;
    const start = () => compose([...allModules, testkitModule, bad({ entities: [entity(broken)] })], config);
    expect(start).toThrow(
      /entity bad\.widget: Money field price takes its currency from currency, which is no field: declare currency: Currency\(\) beside it/,
    );
    expect(start).toThrow(
      /entity bad\.widget: Money field cost takes its currency from color, which is not a currency field: declare color: Currency\(\) beside it/,
    );
    expect(start).toThrow(/entity bad\.widget: admin\.overdue\.field name is not a date-time field/);
    expect(start).toThrow(
      /entity bad\.widget: admin\.overdue\.except names states, but the entity declares no state field/,
    );
    // A date-time field, and no states to stop the clock: accepted.
    const fine = {
      ...widget,
      module: 'bad',
      admin: { title: 'name', columns: ['name'], overdue: { field: 'approvedAt' } },
    };
    expect(() =>
      compose([...allModules, testkitModule, bad({ entities: [entity(fine as never)] })], config),
    ).not.toThrow();
  });

  it('refuse a global entity whose write permission is not an operator permission, naming entity and permission', async () => {
    const open = defineEntity({
      ...gadget,
      module: 'bad',
      permissions: { read: 'widget:read', write: 'widget:write' },
    });
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(open)] })],
      /entity bad\.gadget is global: its write permission widget:write is not an operator permission/,
    );
  });

  it('refuse a global entity with a command whose permission is not an operator permission, naming the command', async () => {
    const commanded = defineEntity({
      ...gadget,
      module: 'bad',
      commands: { reprice: { summary: 'Reprice', permission: 'widget:write', run: async () => ({ price: 1 }) } },
    });
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(commanded)] })],
      /entity bad\.gadget is global: command reprice uses widget:write, which is not an operator permission/,
    );
    // Defaulting to the entity's operator write permission is accepted.
    const defaulted = defineEntity({
      ...gadget,
      module: 'bad',
      commands: { reprice: { summary: 'Reprice', run: async () => ({ price: 1 }) } },
    });
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(defaulted)] })], config)).not.toThrow();
  });

  it('refuse contradictory shapes: a global singleton, singleton routes on a collection, a computed field named like a field, a row-access filter naming a non-field', () => {
    const globalSingleton = {
      ...setting,
      module: 'bad',
      scope: 'global',
      permissions: { read: 'widget:read', write: 'widget:operate' },
    } as never;
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(globalSingleton)] })], config)).toThrow(
      /entity bad\.setting is global and a singleton/,
    );
    const routesOnCollection = { ...widget, module: 'bad', singletonRoutes: ['update'] } as never;
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(routesOnCollection)] })], config)).toThrow(
      /entity bad\.widget declares singletonRoutes but is not a singleton/,
    );
    const shadowing = { ...widget, module: 'bad', computed: { name: Type.String() } } as never;
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(shadowing)] })], config)).toThrow(
      /entity bad\.widget: computed field name is already a field/,
    );
    const strayFilter = {
      ...widget,
      module: 'bad',
      rowAccess: (ctx: { actorId: string | null }) => ({ name: 'x', ownerId: ctx.actorId }),
    } as never;
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(strayFilter)] })], config)).toThrow(
      /entity bad\.widget: rowAccess names ownerId, which is not a field/,
    );
    const needsCaller = {
      ...widget,
      module: 'bad',
      rowAccess: (ctx: { session: { userId: string } }) => ({ name: ctx.session.userId }),
    } as never;
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(needsCaller)] })], config)).toThrow(
      /entity bad\.widget: rowAccess fails with no caller/,
    );
    const unknownReadOnly = { ...widget, module: 'bad', readOnly: ['shine'] } as never;
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(unknownReadOnly)] })], config)).toThrow(
      /readOnly field shine is not a field/,
    );
  });

  it('refuse a problem code two modules declare, or a module and the framework, naming both', async () => {
    await expectRefusal(
      [...allModules, bad({ problems: { PLAN_IN_USE: { status: 409, title: 'Busy plan' } } })],
      /problem code PLAN_IN_USE is declared by module billing and by module bad/,
    );
    await expectRefusal(
      [...allModules, bad({ problems: { NOT_FOUND: { status: 404, title: 'Gone' } } })],
      /problem code NOT_FOUND is declared by framework and by module bad/,
    );
  });

  it('refuse a route or a command documenting a problem code no module declares, naming it', async () => {
    const route = { ...ok, problems: { 409: 'The thing is gone (THING_GONE)' } };
    await expectRefusal(
      [...allModules, bad({ routes: [route] })],
      /route GET \/api\/v1\/bad\/thing \(module bad\) documents problem code THING_GONE, which no module declares/,
    );
    const refusing = defineEntity({
      ...widget,
      module: 'bad',
      commands: {
        ...widget.commands,
        approve: { ...widget.commands!.approve, problems: { 409: 'Already approved (WIDGET_APPROVED)' } },
      },
    });
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(refusing)] })],
      /route POST \/api\/v1\/bad\/widgets\/:id\/approve \(module bad\) documents problem code WIDGET_APPROVED/,
    );
  });

  it('refuse an entity answering with a code no module declares (states.refusal, invalidCodes, uniqueCodes)', () => {
    const undeclared = defineEntity({
      ...widget,
      module: 'bad',
      invalidCodes: { name: 'NAME_ODD' as never },
      uniqueCodes: { name: { index: 'widgets_name_unique', code: 'NAME_TAKEN' as never } },
    });
    const start = () => compose([userModule, testkitModule, bad({ entities: [entity(undeclared)] })], config);
    expect(start).toThrow(
      /entity bad\.widget: invalidCodes\.name names problem code NAME_ODD, which no module declares/,
    );
    expect(start).toThrow(/entity bad\.widget: uniqueCodes\.name names problem code NAME_TAKEN/);
  });

  it('never throw: an unknown states.refusal, or a declaration of the wrong shape, is one line naming it and the fix', async () => {
    const task = taskModule.entities![0]!;
    const withTask = (def: unknown) => [
      ...allModules.filter((m) => m.name !== 'task'),
      { ...taskModule, entities: [def as typeof task, ...taskModule.entities!.slice(1)] },
    ];
    // The case: a refusal code no module declares (it used to end in a TypeError at stateProblems).
    const unknownRefusal = { ...task, states: { ...task.states!, refusal: 'TASK_NOPE' } };
    await expectRefusal(
      withTask(unknownRefusal),
      /entity task\.task: states\.refusal names problem code TASK_NOPE, which no module declares/,
    );
    // A command's states with no `from` (cast past the types): read while its routes are composed.
    const resolve = task.commands!.resolve!;
    const noFrom = { ...task, commands: { ...task.commands, resolve: { ...resolve, states: { to: 'resolved' } } } };
    const start = () => compose(withTask(noFrom), config);
    expect(start).toThrow(BootCheckError);
    expect(start).not.toThrow(TypeError);
    expect(start).toThrow(
      /- entity task\.task: command resolve states\.from is not a list of states; declare the states it acts in/,
    );
    expect(start).toThrow(/- entity task\.task: its declaration could not be read \(.*\); give it the shape/);
  });

  it('refuse an integer field without bounds, naming the field and the range to declare (issue 50: integer columns)', async () => {
    const unbounded = {
      ...widget,
      module: 'bad',
      fields: { ...widget.fields, count: Type.Integer({ minimum: 0 }), total: Type.Optional(Type.Integer()) },
    } as unknown as typeof widget;
    await expectRefusal(
      [userModule, testkitModule, bad({ entities: [entity(unbounded)] })],
      /entity bad\.widget: integer field count declares no maximum: declare its range, e\.g\. Type\.Integer\(\{ minimum: 0, maximum: 2147483647 \}\)/,
    );
    const start = () => compose([userModule, testkitModule, bad({ entities: [entity(unbounded)] })], config);
    expect(start).toThrow(/entity bad\.widget: integer field total declares no minimum or maximum/);
    const huge = {
      ...widget,
      module: 'bad',
      fields: { ...widget.fields, count: Type.Integer({ minimum: 0, maximum: 2 ** 60 }) },
    } as unknown as typeof widget;
    expect(() => compose([userModule, testkitModule, bad({ entities: [entity(huge)] })], config)).toThrow(
      /entity bad\.widget: integer field count has a bound past ±9007199254740991/,
    );
  });

  // A copy of the widget under another name and module: only what the test changes is wrong.
  const thing = (over: Record<string, unknown>) =>
    entity(defineEntity({ ...widget, module: 'bad', name: 'thing', ...over } as never));
  const refusalOf = (modules: readonly ModuleDefinition[]): string => {
    try {
      compose(modules, config);
    } catch (err) {
      expect(err).toBeInstanceOf(BootCheckError);
      return (err as Error).message;
    }
    throw new Error('the declarations were accepted');
  };

  it('refuse a field list naming an Object.prototype member, and a field named like one', () => {
    const message = refusalOf([
      userModule,
      testkitModule,
      bad({
        entities: [
          thing({
            immutable: ['constructor'],
            readOnly: ['valueOf'],
            indexes: [['toString']],
            eventFields: ['hasOwnProperty'],
            history: { exclude: ['isPrototypeOf'] },
            storage: { unique: ['propertyIsEnumerable'] },
            commandOwned: { approved: 'approve', approvedAt: 'toString' },
          }),
        ],
      }),
    ]);
    expect(message).toMatch(/entity bad\.thing: immutable field constructor is not a field/);
    expect(message).toMatch(/entity bad\.thing: readOnly field valueOf is not a field/);
    expect(message).toMatch(/entity bad\.thing: indexes field toString is not a field/);
    expect(message).toMatch(/entity bad\.thing: eventFields field hasOwnProperty is not a field/);
    expect(message).toMatch(/entity bad\.thing: history\.exclude field isPrototypeOf is not a field/);
    expect(message).toMatch(/entity bad\.thing: storage\.unique field propertyIsEnumerable is not a field/);
    expect(message).toMatch(/entity bad\.thing: field approvedAt is owned by command toString, which is not declared/);
    // A field so named would be found on every object: read-only by accident (in commandOwners), for one.
    expect(
      refusalOf([
        userModule,
        testkitModule,
        bad({ entities: [thing({ fields: { ...widget.fields, toString: Type.String() } })] }),
      ]),
    ).toMatch(
      /entity bad\.thing: field toString is named like a member every object has \(Object\.prototype\); rename it/,
    );
  });

  it("refuse a field taking a framework column, or another field's column", () => {
    for (const [field, column] of [
      ['id', 'id'],
      ['tenantId', 'tenant_id'],
      ['createdAt', 'created_at'],
      ['updated_at', 'updated_at'],
      ['deletedAt', 'deleted_at'],
    ]) {
      const fields = { ...widget.fields, [field!]: Type.Optional(Type.String({ maxLength: 10 })) };
      expect(refusalOf([userModule, testkitModule, bad({ entities: [thing({ fields })] })])).toMatch(
        new RegExp(`entity bad\\.thing: field ${field} takes the framework's column ${column}; rename it`),
      );
    }
    const twins = { ...widget.fields, shelfCode: Type.String(), shelf_code: Type.String() };
    expect(refusalOf([userModule, testkitModule, bad({ entities: [thing({ fields: twins })] })])).toMatch(
      /entity bad\.thing: fields shelfCode and shelf_code both take the column shelf_code/,
    );
  });

  it('refuse a Secret() field sorted, filtered or searched by; a secret title is not searched by default', () => {
    const fields = { ...widget.fields, token: Secret(Type.String({ maxLength: 64 })) };
    for (const kind of ['sortable', 'filterable', 'searchable'])
      expect(refusalOf([userModule, testkitModule, bad({ entities: [thing({ fields, [kind]: ['token'] })] })])).toMatch(
        new RegExp(
          `entity bad\\.thing: ${kind} names the Secret\\(\\) field token: a secret is never sorted, filtered or searched by`,
        ),
      );
    // `q` searches the title by default: a secret one would answer which rows hold what the caller types.
    const titled = defineEntity({
      ...widget,
      module: 'bad',
      name: 'thing',
      fields,
      admin: { title: 'token', columns: [] },
    } as never);
    expect(resolveEntity(titled).searchable).toEqual([]);
  });

  it('refuse a module, entity, plural or command name that cannot name a path, an operation id and a table', () => {
    const named = (name: string) =>
      defineModule({ name, entities: [entity(defineEntity({ ...widget, module: name, name: 'thing' } as never))] });
    for (const name of ['Bad', 'ba d', 'bäd', 'bad/x'])
      expect(refusalOf([userModule, testkitModule, named(name)])).toContain(
        `module ${JSON.stringify(name)}: its name must be ASCII letters and digits`,
      );
    for (const name of ['Thing', 'th ing', 'thïng', 'th-ing'])
      expect(refusalOf([userModule, testkitModule, bad({ entities: [thing({ name })] })])).toContain(
        `entity bad.${name}: its name ${JSON.stringify(name)} must be ASCII letters and digits`,
      );
    for (const plural of ['Things', 'th ings', 'thïngs', 'a/b', '', 'things-'])
      expect(refusalOf([userModule, testkitModule, bad({ entities: [thing({ plural })] })])).toContain(
        `entity bad.thing: its plural ${JSON.stringify(plural)} must be ASCII letters and digits in words joined by single hyphens`,
      );
    for (const command of ['Approve', 'ap prove', 'äpprove', 'ap/prove'])
      expect(
        refusalOf([
          userModule,
          testkitModule,
          bad({ entities: [thing({ commands: { ...widget.commands, [command]: widget.commands!.approve } })] }),
        ]),
      ).toContain(`entity bad.thing: command ${JSON.stringify(command)} must be ASCII letters and digits in words`);
  });

  it('refuse a module problem code a description cannot name, or whose status is no refusal', () => {
    const message = refusalOf([
      bad({
        problems: {
          oops: { status: 409, title: 'Oops' },
          THING_DONE: { status: 200, title: 'Done' },
          THING_ODD: { status: 999, title: 'Odd' },
        },
      }),
    ]);
    expect(message).toMatch(
      /module bad: problem code "oops" is not UPPER_SNAKE \(PLAN_IN_USE\), so no description can name it/,
    );
    expect(message).toMatch(/module bad: problem code THING_DONE has status 200: a refusal is a 4xx or a 5xx/);
    expect(message).toMatch(/module bad: problem code THING_ODD has status 999: a refusal is a 4xx or a 5xx/);
    expect(() => compose([bad({ problems: { THING_GONE: { status: 410, title: 'Gone' } } })], config)).not.toThrow();
  });

  it('list every problem at once', () => {
    const route = { ...ok, access: { permission: 'thing:frobnicate' }, publishes: ['elsewhere.thing.exploded'] };
    const start = () =>
      compose(
        [bad({ routes: [route], subscriptions: [{ name: 's', event: 'bad.nothing', handle: async () => {} }] })],
        config,
      );
    expect(start).toThrow(/thing:frobnicate[\s\S]*elsewhere\.thing\.exploded[\s\S]*bad\.nothing/);
  });
});
