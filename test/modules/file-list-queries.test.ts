import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { FILES, sha256 } from './file/helpers.ts';

/**
 * Issue 44: the file list, written by hand, filters by visibility, media type, size and creation
 * time (and its other fields) through the same query language as every list. The rows are written
 * straight to the table (no bytes are stored), so this file sits outside test/modules/file, whose
 * suite runs a second time on the S3 driver.
 */

const t = useTestApp({ customers: ['acme'] });
const HOST = 'acme.localhost';
let reader: SignedIn;

beforeAll(async () => {
  reader = await signInAs(t.app, t.acme, ['file:read']);
  const files: [name: string, size: number, mediaType: string, visibility: string, daysOld: number][] = [
    ['logo.png', 2_000_000, 'image/png', 'public', 1],
    ['photo.jpeg', 500_000, 'image/jpeg', 'private', 10],
    ['notes.txt', 120, 'text/plain', 'private', 2],
    ['report.pdf', 3_000_000, 'application/pdf', 'public', 30],
  ];
  await t.app.services.transactions.run(t.acme, async (ctx) => {
    for (const [name, size, mediaType, visibility, daysOld] of files) {
      await ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into files (storage_key, name, size, sha256, media_type, visibility, uploaded_by, created_at)
           values ($1, $2, $3, $4, $5, $6, $7, now() - make_interval(days => $8))`,
          [randomUUID(), name, size, sha256(name), mediaType, visibility, reader.userId, daysOld],
        ),
      );
    }
  });
});

const names = async (query: string) => {
  const res = await t.app.http(HOST).get(`${FILES}?${query}`).set('Cookie', reader.cookie);
  expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(200);
  return (res.body.items as { name: string }[]).map((f) => f.name);
};

describe('the file list answers questions', () => {
  it('by visibility, media type, size and creation time', async () => {
    expect((await names('visibility=eq.public')).sort()).toEqual(['logo.png', 'report.pdf']);
    expect((await names('mediaType=startsWith.image/&sort=-size')).sort()).toEqual(['logo.png', 'photo.jpeg']);
    expect(await names('size=gt.1000000&sort=-size')).toEqual(['report.pdf', 'logo.png']);
    expect((await names('createdAt=gte.now-7d')).sort()).toEqual(['logo.png', 'notes.txt']);
    expect(await names('visibility=eq.private&size=lt.1000&fields=name')).toEqual(['notes.txt']);
    expect(await names('or=(mediaType.eq.application/pdf,size.lte.120)&sort=name')).toEqual([
      'notes.txt',
      'report.pdf',
    ]);
  });

  it('sorts by any of its fields, and says which sorts an index serves', async () => {
    expect(await names('sort=mediaType')).toEqual(['report.pdf', 'photo.jpeg', 'logo.png', 'notes.txt']);
    const doc = await t.app.http(HOST).get('/api/v1/openapi.json');
    const sort = doc.body.paths['/api/v1/file/files'].get.parameters.find((p: { name: string }) => p.name === 'sort');
    expect(sort.description).toMatch(/An index serves: name, -name, size, -size, createdAt, -createdAt;/);
  });

  it('refuses an operator its field does not take, naming the ones it does', async () => {
    const res = await t.app.http(HOST).get(`${FILES}?visibility=contains.pub`).set('Cookie', reader.cookie);
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({
      pointer: '/querystring/visibility',
      message: expect.stringMatching(/visibility takes eq, neq, gt, gte, lt, lte, in/),
    });
    const bad = await t.app.http(HOST).get(`${FILES}?visibility=eq.secret`).set('Cookie', reader.cookie);
    expect(bad.body.errors[0].message).toMatch(/one of public, private/);
  });
});
