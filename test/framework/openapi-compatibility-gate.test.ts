import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';
import { SNAPSHOT_FILE, gate } from '../../scripts/openapi/compatibility.ts';

type Json = Record<string, unknown>;
let app: TestApp;
let served: Json;

beforeAll(async () => {
  // The installation's modules: the document published to consumers (npm run openapi:accept writes the same).
  app = await startTestApp({ modules: allModules });
  served = (await app.http().get('/api/v1/openapi.json')).body as Json;
});
afterAll(async () => {
  await app?.close();
});

describe('the OpenAPI compatibility gate', () => {
  it('passes only when the served document is the committed snapshot (npm run openapi:accept updates it)', () => {
    const snapshot = JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8')) as Json;
    const verdict = gate(snapshot, served);
    expect(verdict.pass, verdict.report).toBe(true);
  });

  it('fails, as breaking, when a response field is removed', () => {
    const next = structuredClone(served) as {
      components: { schemas: Record<string, { properties: Json; required: string[] }> };
    };
    const task = next.components.schemas.Task!;
    delete task.properties.title;
    task.required = task.required.filter((f) => f !== 'title');
    const verdict = gate(served, next as unknown as Json);
    expect(verdict.pass).toBe(false);
    expect(verdict.breaking).toBe(true);
    expect(verdict.report).toMatch(/BREAKING {2}GET \/api\/v1\/task\/tasks\/\{id\} 200\.title: removed response field/);
    expect(verdict.report).toMatch(/npm run openapi:accept/);
  });

  it('fails, as compatible, when only a description changes', () => {
    const next = structuredClone(served) as { info: { description: string } };
    next.info.description += ' More words.';
    const verdict = gate(served, next as unknown as Json);
    expect(verdict).toMatchObject({ pass: false, breaking: false });
    expect(verdict.report).toMatch(/: compatible\./);
  });
});
