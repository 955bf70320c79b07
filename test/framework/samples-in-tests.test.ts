import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allModules } from '../../modules/index.ts';
import { sourceFiles } from '../helpers/import-graph.ts';
import { entitiesWithSamples } from '../helpers/samples/overrides.ts';

/**
 * Test samples (the values the suites merge into the bodies they derive from an entity's
 * schemas) are test data: they are registered from test/helpers/samples/overrides.ts, and no file outside
 * test/ declares or exports one (issue 43, point 4). Production code ships no fixture.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const PRODUCTION = ['main.ts', 'framework', 'modules', 'scripts'].flatMap((dir) => sourceFiles(ROOT, dir));

// A member named sample or sampleCommand: a method (`async sample(ctx, n) {`), a property
// (`sample: ...`) or an interface member (`sample?(...)`), at the start of a line.
const SAMPLE_MEMBER = /^[ \t]*(?:async[ \t]+)?(sample|sampleCommand)[ \t]*\??[ \t]*[(:]/m;

describe('no file outside test/ exports test samples', () => {
  it('scans every file of main.ts, framework/, modules/ and scripts/', () => {
    expect(PRODUCTION.length).toBeGreaterThan(300);
    expect(PRODUCTION).toContain('modules/billing/subscription.entity.ts');
  });

  it('no production file declares a sample or sampleCommand member (an entity definition, the definition type)', () => {
    const declaring = PRODUCTION.filter((file) => SAMPLE_MEMBER.test(readFileSync(join(ROOT, file), 'utf8')));
    expect(declaring).toEqual([]);
  });

  it("no installed entity's definition carries one", () => {
    const carrying = allModules.flatMap((module) =>
      (module.entities ?? [])
        .filter((entity) => Object.keys(entity).some((key) => /sample/i.test(key)))
        .map((entity) => `${entity.module}.${entity.name}`),
    );
    expect(carrying).toEqual([]);
  });

  it('the samples the suites use are registered from test/helpers, by entity key', () => {
    const keys = new Set(allModules.flatMap((m) => (m.entities ?? []).map((e) => `${e.module}.${e.name}`)));
    expect(entitiesWithSamples()).toContain('billing.subscription');
    expect(entitiesWithSamples().filter((key) => !keys.has(key))).toEqual([]);
  });
});
