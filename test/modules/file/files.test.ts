import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { outboxRows } from '../../helpers/outbox.ts';
import { sessionFormToken } from '../../../framework/access/form-token.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { FILES, PNG, PUBLIC, form, sha256 } from './helpers.ts';
import { fileDriver, type FileDriver } from './driver.ts';

const MAX = 1000;
const QUOTA = 2500;

let driver: FileDriver;
let app: TestApp;
let n = 0;

beforeAll(async () => {
  // The local disk, or an S3 bucket (test/modules/file/driver.ts).
  driver = await fileDriver();
  app = await startTestApp({ config: testConfig({ files: { ...driver.files, max_bytes: MAX, quota_bytes: QUOTA } }) });
});
afterAll(async () => {
  await app?.close();
  await driver?.close();
});

/** A fresh tenant (its own quota) and a caller holding both file permissions. */
async function tenantWithCaller(permissions = ['file:read', 'file:manage']) {
  n += 1;
  const host = `files${n}.localhost`;
  const tenant = await createCustomer(app, `files${n}`, host);
  const caller = await signInAs(app, tenant, permissions);
  return { tenant, host, caller, http: () => app.http(host) };
}

type Ctx = Awaited<ReturnType<typeof tenantWithCaller>>;

function upload(
  ctx: Ctx,
  content: Buffer | string,
  options: { visibility?: string; filename?: string; type?: string; field?: string } = {},
) {
  const { body, type } = form([
    {
      name: options.field ?? 'file',
      filename: options.filename ?? 'notes.bin',
      type: options.type ?? 'application/octet-stream',
      content,
    },
  ]);
  return ctx
    .http()
    .post(`${FILES}?visibility=${options.visibility ?? 'private'}`)
    .set('Cookie', ctx.caller.cookie)
    .set('Content-Type', type)
    .send(body);
}

async function rowCount(tenant: TenantRef): Promise<number> {
  const { rows } = await app.services.db.pool.query<{ n: number }>(
    'select count(*)::int as n from files where tenant_id = $1',
    [tenant.id],
  );
  return rows[0]!.n;
}

async function storageKey(id: string): Promise<string> {
  const { rows } = await app.services.db.pool.query<{ storage_key: string }>(
    'select storage_key from files where id = $1',
    [id],
  );
  return rows[0]!.storage_key;
}

describe('Files: the media type and name an upload is stored with', () => {
  const send = (ctx: Ctx, parts: Parameters<typeof form>[0]) => {
    const { body, type } = form(parts);
    return ctx
      .http()
      .post(`${FILES}?visibility=private`)
      .set('Cookie', ctx.caller.cookie)
      .set('Content-Type', type)
      .send(body);
  };

  it('stores a part that declares no Content-Type as application/octet-stream, whatever its bytes', async () => {
    const ctx = await tenantWithCaller();
    for (const content of ['plain words', PNG, Buffer.from([0xff, 0xfe, 0x00, 0x01])]) {
      const res = await send(ctx, [{ name: 'file', filename: 'untyped', content }]);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.mediaType).toBe('application/octet-stream');
      const download = await ctx.http().get(`${FILES}/${res.body.id}/content`).set('Cookie', ctx.caller.cookie);
      expect(download.headers['content-type']).toBe('application/octet-stream');
      expect(download.headers['content-disposition']).toMatch(/^attachment;/);
    }
    // A part that says text/plain keeps it; a field before the file part is not taken for it.
    const typed = await send(ctx, [
      { name: 'note', content: 'a field first' },
      { name: 'file', filename: 'typed.txt', type: 'text/plain', content: 'words' },
    ]);
    expect(typed.body.mediaType).toBe('text/plain');
    const untyped = await send(ctx, [
      { name: 'note', type: 'text/plain', content: 'a typed field first' },
      { name: 'file', filename: 'untyped', content: 'words' },
    ]);
    expect(untyped.body.mediaType).toBe('application/octet-stream');
  });

  it('removes control and format characters (Cc, Cf: bidi overrides, zero-width characters) from the name', async () => {
    const ctx = await tenantWithCaller();
    const res = await send(ctx, [
      { name: 'file', filename: 'in\u0007voice\u202Efdp.exe\u200B\u2066\u00AD', type: 'application/zip', content: 'x' },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.name).toBe('invoicefdp.exe');
    const download = await ctx.http().get(`${FILES}/${res.body.id}/content`).set('Cookie', ctx.caller.cookie);
    expect(download.headers['content-disposition']).toBe("attachment; filename*=UTF-8''invoicefdp.exe");
    const nothingLeft = await send(ctx, [
      { name: 'file', filename: '\u202E\u200B', type: 'application/zip', content: 'x' },
    ]);
    expect(nothingLeft.body.name).toBe('file');
  });
});

describe('Files rule 1–2: upload streams the bytes to storage, then writes the row', () => {
  it('answers 201 with the record of what arrived, the blob stored under a UUID key, and publishes file.uploaded', async () => {
    const ctx = await tenantWithCaller();
    const content = Buffer.from('hello, files');
    const res = await upload(ctx, content, { filename: '../../etc/pass\u0001wd.bin' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'passwd.bin',
      size: content.length,
      sha256: sha256(content),
      mediaType: 'application/octet-stream',
      visibility: 'private',
      uploadedBy: ctx.caller.userId,
      createdAt: expect.any(String),
    });
    const key = await storageKey(res.body.id);
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(await driver.has(key)).toBe(true);
    expect((await driver.stored()).every((f) => !f.includes('passwd'))).toBe(true);
    const events = (await outboxRows(app, 'file.uploaded')).filter((e) => e.payload.id === res.body.id);
    expect(events).toHaveLength(1);
    expect(events[0]!.actor_id).toBe(ctx.caller.userId);
  });

  it('visibility is a query parameter: missing or unknown is refused', async () => {
    const ctx = await tenantWithCaller();
    const { body, type } = form([{ name: 'file', filename: 'a.bin', content: 'x' }]);
    const res = await ctx.http().post(FILES).set('Cookie', ctx.caller.cookie).set('Content-Type', type).send(body);
    expect(res.status).toBe(422);
    expect((await upload(ctx, 'x', { visibility: 'secret' })).status).toBe(422);
    expect(await rowCount(ctx.tenant)).toBe(0);
  });

  it('visibility sent as a form field is refused, saying to send it in the query string; nothing is kept (issue 41, point 8: uploads)', async () => {
    const ctx = await tenantWithCaller();
    const storedBefore = (await driver.stored()).length;
    const post = (parts: Parameters<typeof form>[0], query = '?visibility=public') => {
      const { body, type } = form(parts);
      return ctx.http().post(`${FILES}${query}`).set('Cookie', ctx.caller.cookie).set('Content-Type', type).send(body);
    };
    const file = { name: 'file', filename: 'a.bin', content: 'bytes' };
    const field = { name: 'visibility', content: 'public' };
    const message =
      'visibility is a query parameter, not a form field: send it in the query string (?visibility=public or ?visibility=private)';
    // Before the file part, or after it, as well as in the query.
    for (const parts of [
      [field, file],
      [file, field],
    ]) {
      const res = await post(parts);
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED', detail: message });
      expect(res.body.errors).toEqual([{ pointer: '/body/visibility', message }]);
    }
    // Only as a form field: the query's own refusal says where it goes.
    const only = await post([field, file], '');
    expect(only.status).toBe(422);
    expect(only.body.errors).toEqual([
      {
        pointer: '/querystring/visibility',
        message: 'is required: send it in the query string (?visibility=...), not in the body',
      },
    ]);
    expect(await rowCount(ctx.tenant)).toBe(0);
    expect((await driver.stored()).length).toBe(storedBefore);
    // Another field is no matter: the upload is stored.
    expect((await post([{ name: 'note', content: 'x' }, file])).status).toBe(201);
  });

  it('needs file:manage', async () => {
    const ctx = await tenantWithCaller(['file:read']);
    const res = await upload(ctx, 'x');
    expect(res.status).toBe(403);
  });

  it('the request body is bounded at files.max_bytes plus a 64 KiB envelope', async () => {
    const ctx = await tenantWithCaller();
    const res = await ctx
      .http()
      .post(`${FILES}?visibility=private`)
      .set('Cookie', ctx.caller.cookie)
      .set('Content-Type', 'multipart/form-data; boundary=x')
      .send(Buffer.alloc(MAX + 64 * 1024 + 1, 0x61));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE');
  });
});

describe('Files rule 3: 413 past the limit or the quota, nothing kept; exactly the limit is kept', () => {
  it('keeps an upload of exactly files.max_bytes', async () => {
    const ctx = await tenantWithCaller();
    const res = await upload(ctx, Buffer.alloc(MAX, 7));
    expect(res.status).toBe(201);
    expect(res.body.size).toBe(MAX);
  });

  it('refuses one byte more with 413 FILE_TOO_LARGE and keeps no blob and no row', async () => {
    const ctx = await tenantWithCaller();
    const before = await driver.stored();
    const res = await upload(ctx, Buffer.alloc(MAX + 1, 7));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('FILE_TOO_LARGE');
    expect(await rowCount(ctx.tenant)).toBe(0);
    expect(await driver.stored()).toEqual(before);
  });

  it("refuses past the tenant's quota with 413 QUOTA_EXCEEDED and keeps nothing", async () => {
    const ctx = await tenantWithCaller();
    expect((await upload(ctx, Buffer.alloc(MAX, 1))).status).toBe(201);
    expect((await upload(ctx, Buffer.alloc(MAX, 2))).status).toBe(201);
    const before = await driver.stored();
    const res = await upload(ctx, Buffer.alloc(QUOTA - 2 * MAX + 1, 3));
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('QUOTA_EXCEEDED');
    expect(await rowCount(ctx.tenant)).toBe(2);
    expect(await driver.stored()).toEqual(before);
    // Exactly what is left fits.
    expect((await upload(ctx, Buffer.alloc(QUOTA - 2 * MAX, 3))).status).toBe(201);
  });

  it('two concurrent uploads cannot both squeeze past the quota', async () => {
    const ctx = await tenantWithCaller();
    expect((await upload(ctx, Buffer.alloc(MAX, 1))).status).toBe(201);
    // 1500 bytes of room: each alone fits, both do not.
    const results = await Promise.all([upload(ctx, Buffer.alloc(MAX, 4)), upload(ctx, Buffer.alloc(MAX, 5))]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 413]);
    expect(results.find((r) => r.status === 413)!.body.code).toBe('QUOTA_EXCEEDED');
    expect(await rowCount(ctx.tenant)).toBe(2);
    const { rows } = await app.services.db.pool.query<{ storage_key: string }>(
      'select storage_key from files where tenant_id = $1',
      [ctx.tenant.id],
    );
    for (const { storage_key } of rows) expect(await driver.has(storage_key)).toBe(true);
  });
});

describe('Files rule 3: 422 for no file part, a media type that is not one, or bytes disagreeing with a renderable type', () => {
  const refused = async (ctx: Ctx, res: { status: number; body: { code: string } }, code: string) => {
    expect(res.status).toBe(422);
    expect(res.body.code).toBe(code);
    expect(await rowCount(ctx.tenant)).toBe(0);
  };

  it('a form with no file part is FILE_MISSING', async () => {
    const ctx = await tenantWithCaller();
    const { body, type } = form([{ name: 'note', content: 'just a field' }]);
    const res = await ctx
      .http()
      .post(`${FILES}?visibility=private`)
      .set('Cookie', ctx.caller.cookie)
      .set('Content-Type', type)
      .send(body);
    await refused(ctx, res, 'FILE_MISSING');
    await refused(ctx, await upload(ctx, 'x', { field: 'attachment' }), 'FILE_MISSING');
  });

  it('a media type that is not type/subtype, or longer than 255 characters, is MEDIA_TYPE_INVALID', async () => {
    const ctx = await tenantWithCaller();
    const before = await driver.stored();
    await refused(ctx, await upload(ctx, 'x', { type: 'not-a-media-type' }), 'MEDIA_TYPE_INVALID');
    await refused(ctx, await upload(ctx, 'x', { type: `application/${'x'.repeat(250)}` }), 'MEDIA_TYPE_INVALID');
    expect(await driver.stored()).toEqual(before);
    // 255 characters is a media type.
    expect((await upload(ctx, 'x', { type: `application/${'x'.repeat(243)}` })).status).toBe(201);
  });

  it('a renderable type whose bytes disagree is MEDIA_TYPE_MISMATCH, and nothing is kept', async () => {
    const ctx = await tenantWithCaller();
    const before = await driver.stored();
    await refused(ctx, await upload(ctx, 'plain words', { type: 'image/png' }), 'MEDIA_TYPE_MISMATCH');
    await refused(ctx, await upload(ctx, PNG, { type: 'image/jpeg' }), 'MEDIA_TYPE_MISMATCH');
    await refused(ctx, await upload(ctx, 'not a pdf', { type: 'application/pdf' }), 'MEDIA_TYPE_MISMATCH');
    await refused(
      ctx,
      await upload(ctx, Buffer.from('nul\u0000inside'), { type: 'text/plain' }),
      'MEDIA_TYPE_MISMATCH',
    );
    await refused(
      ctx,
      await upload(ctx, Buffer.from([0x61, 0xff, 0xfe]), { type: 'text/plain; charset=utf-8' }),
      'MEDIA_TYPE_MISMATCH',
    );
    expect(await driver.stored()).toEqual(before);
    expect((await upload(ctx, PNG, { type: 'image/png' })).status).toBe(201);
    expect((await upload(ctx, 'héllo', { type: 'text/plain' })).status).toBe(201);
    expect((await upload(ctx, '%PDF-1.7\n', { type: 'application/pdf' })).status).toBe(201);
    // A type that is not renderable is not sniffed: it is downloaded as an attachment.
    expect((await upload(ctx, PNG, { type: 'application/zip' })).status).toBe(201);
  });
});

describe('Files rule 4: the same bytes uploaded twice are two files', () => {
  it('gives two records with two storage keys', async () => {
    const ctx = await tenantWithCaller();
    const a = await upload(ctx, 'same');
    const b = await upload(ctx, 'same');
    expect(a.body.id).not.toBe(b.body.id);
    expect(a.body.sha256).toBe(b.body.sha256);
    expect(await storageKey(a.body.id)).not.toBe(await storageKey(b.body.id));
  });
});

describe('Files: list and read', () => {
  it('lists with the framework paging and reads one record; both need file:read', async () => {
    const ctx = await tenantWithCaller();
    const a = await upload(ctx, 'a');
    await upload(ctx, 'bb');
    const list = await ctx.http().get(`${FILES}?sort=-size&limit=1`).set('Cookie', ctx.caller.cookie);
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(2);
    expect(list.body.items[0].size).toBe(2);
    expect(list.body.next).toEqual(expect.any(String));
    expect(list.body.items[0]).not.toHaveProperty('storageKey');
    const read = await ctx.http().get(`${FILES}/${a.body.id}`).set('Cookie', ctx.caller.cookie);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(a.body);
    const other = await tenantWithCaller(['file:read']);
    expect((await other.http().get(`${FILES}/${a.body.id}`).set('Cookie', other.caller.cookie)).status).toBe(404);
    const none = await tenantWithCaller(['widget:read']);
    expect((await none.http().get(FILES).set('Cookie', none.caller.cookie)).status).toBe(403);
  });
});

describe('Files rule 5: download headers', () => {
  it('a private file of a type that is not renderable: declared type, nosniff, CSP sandbox, CORP, attachment, no-store', async () => {
    const ctx = await tenantWithCaller();
    const up = await upload(ctx, 'zip bytes', { type: 'application/zip', filename: 'résumé (final).zip' });
    const res = await ctx
      .http()
      .get(`${FILES}/${up.body.id}/content`)
      .set('Cookie', ctx.caller.cookie)
      .responseType('blob');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/zip');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(res.headers['cross-origin-resource-policy']).toBe('same-site');
    expect(res.headers['content-disposition']).toBe("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9%20%28final%29.zip");
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.etag).toBe(`"${sha256('zip bytes')}"`);
    expect(Buffer.from(res.body).toString()).toBe('zip bytes');
  });

  it('each of the seven renderable types is sent inline, named (issue 41: a saved copy keeps its name); a public file sets no Cache-Control', async () => {
    const ctx = await tenantWithCaller();
    const samples: Record<string, Buffer | string> = {
      'image/png': PNG,
      'image/jpeg': Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]),
      'image/gif': 'GIF89a....',
      'image/webp': 'RIFF\u0000\u0000\u0000\u0000WEBPVP8 ',
      'image/avif': Buffer.concat([
        Buffer.from([0, 0, 0, 0x1c]),
        Buffer.from('ftypavif\u0000\u0000\u0000\u0000avifmif1miaf'),
      ]),
      'application/pdf': '%PDF-1.4\n',
      'text/plain': 'words',
    };
    for (const [type, content] of Object.entries(samples)) {
      const up = await upload(ctx, content, { type, visibility: 'public' });
      expect(up.status, type).toBe(201);
      const res = await ctx.http().get(`${PUBLIC}/${up.body.id}`);
      expect(res.status, type).toBe(200);
      expect(res.headers['content-type'], type).toBe(type);
      expect(res.headers['content-disposition'], type).toBe("inline; filename*=UTF-8''notes.bin");
      expect(res.headers['cache-control'], type).toBeUndefined();
      expect(res.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
      expect(res.headers['cross-origin-resource-policy']).toBe('same-site');
    }
  });
});

describe('Files rule 5, a renderable download keeps its name (issue 41, point 8: downloads)', () => {
  it('inline; filename*=UTF-8 with the name percent-encoded, on both doors, private and public', async () => {
    const ctx = await tenantWithCaller();
    const expected = "inline; filename*=UTF-8''r%C3%A9sum%C3%A9%20%28final%29.txt";
    const privateUp = await upload(ctx, 'some words', { type: 'text/plain', filename: 'résumé (final).txt' });
    const privateRes = await ctx.http().get(`${FILES}/${privateUp.body.id}/content`).set('Cookie', ctx.caller.cookie);
    expect(privateRes.headers['content-disposition']).toBe(expected);
    expect(privateRes.headers['cache-control']).toBe('no-store');
    const publicUp = await upload(ctx, PNG, {
      type: 'image/png',
      filename: 'résumé (final).txt',
      visibility: 'public',
    });
    const head = await ctx.http().head(`${PUBLIC}/${publicUp.body.id}`);
    expect(head.status).toBe(200);
    expect(head.headers['content-disposition']).toBe(expected);
    // Not renderable: still an attachment, however it is named.
    const other = await upload(ctx, 'x', { type: 'text/html', filename: 'page.html', visibility: 'public' });
    const html = await ctx.http().get(`${PUBLIC}/${other.body.id}`);
    expect(html.headers['content-disposition']).toBe("attachment; filename*=UTF-8''page.html");
  });
});

describe('Files rule 6: ranges, HEAD and conditional requests', () => {
  let ctx: Ctx;
  let url: string;
  const content = 'abcdefghijklmnopqrstuvwxyz';
  beforeAll(async () => {
    ctx = await tenantWithCaller();
    const up = await upload(ctx, content, { type: 'text/plain' });
    url = `${FILES}/${up.body.id}/content`;
  });
  const get = () => ctx.http().get(url).set('Cookie', ctx.caller.cookie);

  it('one range gives 206 with Content-Range; several ranges give the whole file', async () => {
    const one = await get().set('Range', 'bytes=2-5');
    expect(one.status).toBe(206);
    expect(one.headers['content-range']).toBe(`bytes 2-5/${content.length}`);
    expect(one.text).toBe('cdef');
    const several = await get().set('Range', 'bytes=0-1,4-5');
    expect(several.status).toBe(200);
    expect(several.text).toBe(content);
    const outside = await get().set('Range', 'bytes=100-200');
    expect(outside.status).toBe(416);
  });

  it('reads Range as RFC 9110 does: a suffix longer than the file is all of it; a malformed range or several ranges give the whole file', async () => {
    const suffix = await get().set('Range', 'bytes=-100001');
    expect(suffix.status).toBe(206);
    expect(suffix.headers['content-range']).toBe(`bytes 0-25/${content.length}`);
    expect(suffix.text).toBe(content);
    const last = await get().set('Range', 'bytes=-3');
    expect([last.status, last.text]).toEqual([206, 'xyz']);
    for (const malformed of [
      'bytes=1e3-2e3',
      'bytes=0x10-0x20',
      'bytes=5-2',
      'bytes=1-2-3',
      'bytes=-',
      'bytes=',
      'items=0-5',
      'bytes=0-1,x-',
    ]) {
      const res = await get().set('Range', malformed);
      expect(res.status, malformed).toBe(200);
      expect(res.headers['content-range'], malformed).toBeUndefined();
      expect(res.text, malformed).toBe(content);
    }
    // As docs/files.md says: several ranges, overlapping or not, are answered with the whole file.
    for (const several of ['bytes=0-10,5-15', 'bytes=0-100,50-150', 'bytes=0-0,-1', 'bytes=0-1,100-200']) {
      const res = await get().set('Range', several);
      expect(res.status, several).toBe(200);
      expect(res.text, several).toBe(content);
    }
    for (const unsatisfiable of ['bytes=26-', 'bytes=-0', 'bytes=100-200']) {
      const res = await get().set('Range', unsatisfiable);
      expect(res.status, unsatisfiable).toBe(416);
      expect(res.headers['content-range'], unsatisfiable).toBe(`bytes */${content.length}`);
      expect(res.body.code).toBe('RANGE_NOT_SATISFIABLE');
    }
    const ends = await get().set('Range', 'bytes=25-1000');
    expect([ends.status, ends.headers['content-range'], ends.text]).toEqual([
      206,
      `bytes 25-25/${content.length}`,
      'z',
    ]);
    const head = await ctx.http().head(url).set('Cookie', ctx.caller.cookie).set('Range', 'bytes=-100001');
    expect([head.status, head.headers['content-length']]).toEqual([206, String(content.length)]);
  });

  it('If-None-Match naming the sha256 ETag and If-Modified-Since give 304; If-Range decides the range', async () => {
    const etag = `"${sha256(content)}"`;
    expect((await get().set('If-None-Match', etag)).status).toBe(304);
    expect((await get().set('If-None-Match', '"other"')).status).toBe(200);
    const first = await get();
    expect((await get().set('If-Modified-Since', first.headers['last-modified']!)).status).toBe(304);
    const fresh = await get().set('Range', 'bytes=0-2').set('If-Range', etag);
    expect(fresh.status).toBe(206);
    const stale = await get().set('Range', 'bytes=0-2').set('If-Range', '"other"');
    expect(stale.status).toBe(200);
    expect(stale.text).toBe(content);
    expect((await get().set('If-Match', '"other"')).status).toBe(412);
  });

  it('HEAD gives the headers and the length with no body', async () => {
    const res = await ctx.http().head(url).set('Cookie', ctx.caller.cookie);
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe(String(content.length));
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.text ?? '').toBe('');
  });
});

describe('Files rule 7: the public door', () => {
  it('serves a public file; a private file, an unknown id and a host with no tenant give the same 404', async () => {
    const ctx = await tenantWithCaller();
    const pub = await upload(ctx, 'open', { visibility: 'public' });
    const priv = await upload(ctx, 'closed', { visibility: 'private' });
    const ok = await ctx.http().get(`${PUBLIC}/${pub.body.id}`);
    expect(ok.status).toBe(200);
    expect(Buffer.from(ok.body).toString()).toBe('open');
    expect((await ctx.http().head(`${PUBLIC}/${pub.body.id}`)).status).toBe(200);
    const answers = await Promise.all([
      ctx.http().get(`${PUBLIC}/${priv.body.id}`),
      ctx.http().get(`${PUBLIC}/00000000-0000-4000-8000-000000000000`),
      ctx.http().get(`${PUBLIC}/not-an-id`),
      app.http('nobody.localhost').get(`${PUBLIC}/${pub.body.id}`),
    ]);
    for (const res of answers) {
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect({ code: res.body.code, title: res.body.title, detail: res.body.detail }).toEqual({
        code: answers[0]!.body.code,
        title: answers[0]!.body.title,
        detail: answers[0]!.body.detail,
      });
    }
    expect(answers[0]!.body.code).toBe('NOT_FOUND');
    // The tenant still comes from the host: another tenant's host does not serve it.
    const other = await tenantWithCaller();
    expect((await other.http().get(`${PUBLIC}/${pub.body.id}`)).status).toBe(404);
  });
});

describe('Files rule 8: a row whose bytes are missing is an outage, not a 404', () => {
  it('answers 503 BLOB_MISSING on both doors', async () => {
    const ctx = await tenantWithCaller();
    const up = await upload(ctx, 'soon gone', { visibility: 'public' });
    await driver.drop(await storageKey(up.body.id));
    const res = await ctx.http().get(`${FILES}/${up.body.id}/content`).set('Cookie', ctx.caller.cookie);
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('BLOB_MISSING');
    expect((await ctx.http().get(`${PUBLIC}/${up.body.id}`)).body.code).toBe('BLOB_MISSING');
  });
});

describe('Files: delete is hard, the row before the bytes', () => {
  it('removes the row and publishes file.deleted carrying the storage key; the blob stays until the subscription runs', async () => {
    const ctx = await tenantWithCaller();
    const up = await upload(ctx, 'to delete');
    const key = await storageKey(up.body.id);
    const res = await ctx.http().delete(`${FILES}/${up.body.id}`).set('Cookie', ctx.caller.cookie);
    expect(res.status).toBe(204);
    expect(await rowCount(ctx.tenant)).toBe(0);
    expect(await driver.has(key)).toBe(true);
    const events = (await outboxRows(app, 'file.deleted')).filter((e) => e.payload.id === up.body.id);
    expect(events).toHaveLength(1);
    expect(events[0]!.payload.storageKey).toBe(key);
    expect((await ctx.http().delete(`${FILES}/${up.body.id}`).set('Cookie', ctx.caller.cookie)).status).toBe(404);
  });
});

describe("Files: the admin shell's upload runs the route, its form token checked before the file", () => {
  it('refuses a form without the token, or with a wrong one (403 AUTH_CROSS_SITE), and keeps nothing; takes it with the token', async () => {
    const ctx = await tenantWithCaller();
    const before = await driver.stored();
    const post = (parts: Parameters<typeof form>[0]) => {
      const { body, type } = form(parts);
      return ctx
        .http()
        .post('/admin/file/files?visibility=private')
        .set('Cookie', ctx.caller.cookie)
        .set('Sec-Fetch-Site', 'same-origin')
        .set('Content-Type', type)
        .send(body);
    };
    const file = { name: 'file', filename: 'a.txt', type: 'text/plain', content: 'from the page' };
    for (const parts of [[file], [{ name: 'csrf', content: 'W'.repeat(43) }, file]]) {
      const refused = await post(parts);
      expect(refused.status).toBe(403);
      expect(refused.text).toContain('AUTH_CROSS_SITE');
    }
    expect(await rowCount(ctx.tenant)).toBe(0);
    expect(await driver.stored()).toEqual(before);
    const taken = await post([{ name: 'csrf', content: sessionFormToken(ctx.caller.rawSessionId) }, file]);
    expect(taken.status).toBe(303);
    expect(await rowCount(ctx.tenant)).toBe(1);
  });
});

describe('Files: the list has an index for each sort it says an index serves', () => {
  it('gives every indexed sort of the files list an index on (tenant_id, column, id)', async () => {
    const { fileList } = await import('../../../modules/file/routes.ts');
    const { rows } = await app.services.db.pool.query<{ columns: string[] }>(
      `select array(select a.attname::text from unnest(i.indkey) with ordinality as k(attnum, n)
                      join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum order by k.n) as columns
         from pg_index i where i.indrelid = 'files'::regclass`,
    );
    // Every field sorts; the OpenAPI document names the sorts an index serves (these).
    const indexed = [...fileList.model.fields.values()].filter((f) => f.indexed);
    expect(indexed.map((f) => f.name)).toEqual(['name', 'size', 'createdAt']);
    for (const { name: sort, column } of indexed) {
      expect(
        rows.some((r) => r.columns.join() === ['tenant_id', column, 'id'].join()),
        sort,
      ).toBe(true);
    }
  });
});

describe('Files: a malformed form is a 400 problem, never a hanging request or a 500', () => {
  it('a form cut short (no closing boundary) answers 400 MALFORMED_REQUEST and keeps nothing', async () => {
    const ctx = await tenantWithCaller();
    const before = await driver.stored();
    const { body, type } = form([{ name: 'file', filename: 'a.txt', type: 'text/plain', content: 'cut short' }]);
    const cut = body.subarray(0, body.length - Buffer.byteLength('--tenantry-file-boundary--\r\n'));
    const res = await ctx
      .http()
      .post(`${FILES}?visibility=private`)
      .set('Cookie', ctx.caller.cookie)
      .set('Content-Type', type)
      .timeout(10_000)
      .send(cut);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.code).toBe('MALFORMED_REQUEST');
    expect(await rowCount(ctx.tenant)).toBe(0);
    expect(await driver.stored()).toEqual(before);
  });

  it('multipart/form-data without a boundary answers 400 MALFORMED_REQUEST', async () => {
    const ctx = await tenantWithCaller();
    const res = await ctx
      .http()
      .post(`${FILES}?visibility=private`)
      .set('Cookie', ctx.caller.cookie)
      .set('Content-Type', 'multipart/form-data')
      .send('x');
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.code).toBe('MALFORMED_REQUEST');
    expect(await rowCount(ctx.tenant)).toBe(0);
  });
});
