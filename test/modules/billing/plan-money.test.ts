import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInAs } from '../../helpers/app.ts';
import { formatMoney } from '../../../framework/format.ts';
import { billingWorld, createPlan, type BillingWorld } from './support.ts';

/**
 * Issue 50, point 5: the Money field kind (framework/entity/money.ts), on the plan's price: an
 * integer of the currency's minor unit beside the Currency() field naming it. Its round trip, its
 * refusals (422 with a pointer), its OpenAPI schema and catalog entry, the query language and the
 * summaries on it, and the admin shell showing it as people read it.
 */

let world: BillingWorld;
let admin: string;

beforeAll(async () => {
  world = await billingWorld('money-acme');
  admin = (await signInAs(world.app, world.app.operator, ['*'])).cookie;
});
afterAll(async () => {
  await world?.app.close();
});

const http = () => world.app.http();
const PLANS = '/api/v1/billing/plans';

describe('Money: an amount in minor units beside its currency field', () => {
  it('round-trips the integer of minor units and its currency, and PATCH changes either', async () => {
    const plan = await createPlan(world, { code: 'mny-round', price: 1999, currency: 'EUR' });
    expect(plan).toMatchObject({ price: 1999, currency: 'EUR' });
    const read = await http().get(`${PLANS}/${plan.id}`).set('Cookie', world.operator);
    expect(read.body).toMatchObject({ price: 1999, currency: 'EUR' });
    const patched = await http()
      .patch(`${PLANS}/${plan.id}`)
      .set('Cookie', world.operator)
      .send({ price: 900, currency: 'JPY' });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ price: 900, currency: 'JPY' });
  });

  it('refuses a fraction or an amount out of bounds at /body/<field>, and a currency not in use at /body/<currency field>', async () => {
    const send = (fields: Record<string, unknown>) =>
      http()
        .post(PLANS)
        .set('Cookie', world.operator)
        .send({
          code: 'mny-bad',
          name: 'x',
          price: 100,
          currency: 'EUR',
          interval: 'month',
          features: [],
          active: true,
          ...fields,
        });
    for (const price of [19.99, -1, 2147483648]) {
      const refused = await send({ price });
      expect(refused.status, String(price)).toBe(422);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.body.errors.map((e: { pointer: string }) => e.pointer)).toEqual(['/body/price']);
    }
    // XTS (the test code) and XAU (gold) are ISO 4217 codes, but nobody prices anything in them.
    for (const currency of ['XTS', 'XAU', 'ZZZ']) {
      const refused = await send({ currency });
      expect(refused.status, currency).toBe(422);
      expect(refused.body).toMatchObject({
        code: 'VALIDATION_FAILED',
        errors: [{ pointer: '/body/currency', message: 'must be the ISO 4217 code of a currency in use, like EUR' }],
      });
    }
  });

  it('is documented in OpenAPI: the unit, the currency field and an example; the currency field as iso4217', async () => {
    const doc = (await http().get('/api/v1/openapi.json')).body as {
      components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> };
    };
    for (const name of ['Plan', 'PlanCreate', 'PlanUpdate', 'Subscription']) {
      const { price, currency } = doc.components.schemas[name]!.properties;
      expect(price, name).toMatchObject({
        type: 'integer',
        format: 'money',
        'x-currency-field': 'currency',
        minimum: 0,
        maximum: 2147483647,
        examples: [1999],
      });
      expect(price!.description, name).toContain(
        'An amount in the minor unit of the currency in `currency` (ISO 4217): cents for EUR, yen for JPY, so 1999 with EUR is €19.99.',
      );
      expect(currency, name).toMatchObject({
        type: 'string',
        format: 'iso4217',
        pattern: '^[A-Z]{3}$',
        examples: ['EUR', 'USD', 'JPY'],
      });
    }
    // The catalog carries the same schema: a client reading it knows the amount's currency field.
    const catalog = await http().get('/api/v1/admin/resources').set('Cookie', admin);
    expect(catalog.status).toBe(200);
    const plan = (
      catalog.body.resources as { key: string; schema: { properties: Record<string, Record<string, unknown>> } }[]
    ).find((r) => r.key === 'billing.plan');
    expect(plan?.schema.properties.price).toMatchObject({ format: 'money', 'x-currency-field': 'currency' });
    expect(plan?.schema.properties.currency).toMatchObject({ format: 'iso4217' });
  });

  it('takes the comparison operators and the summary’s sum as an integer does', async () => {
    await createPlan(world, { code: 'mny-q-a', price: 500, currency: 'EUR' });
    await createPlan(world, { code: 'mny-q-b', price: 1500, currency: 'EUR' });
    await createPlan(world, { code: 'mny-q-c', price: 2500, currency: 'USD' });
    const listed = await http()
      .get(`${PLANS}?code=startsWith.mny-q-&price=gte.1000&sort=code`)
      .set('Cookie', world.operator);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.items.map((p: { code: string }) => p.code)).toEqual(['mny-q-b', 'mny-q-c']);
    const between = await http()
      .get(`${PLANS}?code=startsWith.mny-q-&price=gt.500&price=lt.2500`)
      .set('Cookie', world.operator);
    expect(between.body.items.map((p: { code: string }) => p.code)).toEqual(['mny-q-b']);
    const summary = await http()
      .get(`${PLANS}/summary?code=startsWith.mny-q-&groupBy=currency&sum=price`)
      .set('Cookie', world.operator);
    expect(summary.status, JSON.stringify(summary.body)).toBe(200);
    expect(summary.body.groups).toEqual([
      { currency: 'EUR', count: 2, sum: { price: 2000 } },
      { currency: 'USD', count: 1, sum: { price: 2500 } },
    ]);
  });

  it('reads in the admin shell as people read it, in lists, detail pages and the edit form', async () => {
    const euro = await createPlan(world, { code: 'mny-shell-eur', name: 'Euro plan', price: 1999, currency: 'EUR' });
    await createPlan(world, { code: 'mny-shell-jpy', name: 'Yen plan', price: 900, currency: 'JPY' });
    const list = await http().get('/admin/billing/plans?limit=100').set('Cookie', admin);
    expect(list.status).toBe(200);
    expect(list.text).toContain('€19.99');
    // The yen has no minor unit: 900 is 900 yen, not 9.
    expect(list.text).toContain(formatMoney(900, 'JPY'));
    expect(formatMoney(900, 'JPY')).toMatch(/¥900$/);
    const detail = await http().get(`/admin/billing/plans/${euro.id}`).set('Cookie', admin);
    const main = detail.text.slice(detail.text.indexOf('<main'));
    expect(main).toContain('€19.99');
    expect(main).not.toMatch(/>\s*1999\s*</);
    // The form takes minor units, as the API does, and says what the amount reads as.
    const edit = await http().get(`/admin/billing/plans/${euro.id}/edit`).set('Cookie', admin);
    expect(edit.status).toBe(200);
    expect(edit.text).toMatch(/<input type="number" id="field-price" name="price" value="1999"/);
    expect(edit.text).toMatch(/<span class="hint" id="field-price-hint">[^<]*Reads as €19\.99\.<\/span>/);
  });
});
