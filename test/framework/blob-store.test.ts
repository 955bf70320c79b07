import { afterAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { LocalDiskStore } from '../../framework/storage/local-disk.ts';
import { releaseChunk } from '../../framework/storage/chunk-release.ts';

const dir = mkdtempSync(join(tmpdir(), 'tenantry-blobs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const store = new LocalDiskStore(dir);

describe('BlobStore: the local disk', () => {
  it('declares that it can seek and list', () => {
    expect(store.capabilities).toEqual({ seekable: true, listable: true });
  });

  it('takes a UUID as the key and nothing else: no caller-chosen name reaches a path', async () => {
    for (const key of ['../escape', 'notes.txt', `${randomUUID()}/x`, randomUUID().toUpperCase(), '']) {
      await expect(store.put(key, Readable.from(['x']))).rejects.toThrow(/not a blob key/);
      expect(() => store.open(key)).toThrow(/not a blob key/);
    }
  });

  it('stores, stats, opens and removes a blob; removing a missing one answers false', async () => {
    const key = randomUUID();
    await store.put(key, Readable.from([Buffer.from('abc'), Buffer.from('def')]));
    expect((await store.stat(key))?.size).toBe(6);
    const chunks: Buffer[] = [];
    for await (const c of store.open(key)) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('abcdef');
    expect(store.locate(key)).toEqual({ root: dir, path: `${key.slice(0, 2)}/${key}` });
    expect(await store.remove(key)).toBe(true);
    expect(await store.remove(key)).toBe(false);
    expect(await store.stat(key)).toBeNull();
  });

  it('a put whose source fails leaves nothing under the key and nothing half written', async () => {
    const key = randomUUID();
    const failing = new Readable({
      read() {
        this.push(Buffer.alloc(1000, 1));
        this.destroy(new Error('client gone'));
      },
    });
    await expect(store.put(key, failing)).rejects.toThrow('client gone');
    expect(await store.stat(key)).toBeNull();
    expect(readdirSync(join(dir, 'incoming'))).toEqual([]);
  });

  it('lists the keys of blobs modified before a time', async () => {
    const key = randomUUID();
    await store.put(key, Readable.from(['x']));
    const listed = async (before: Date) => {
      const keys: string[] = [];
      for await (const k of store.list(before)) keys.push(k);
      return keys;
    };
    expect(await listed(new Date(Date.now() + 60_000))).toContain(key);
    expect(await listed(new Date(Date.now() - 60_000))).not.toContain(key);
  });
});

describe('BlobStore: handed-over chunks are freed once stored', () => {
  const chunkOf = (fill: number) => Buffer.alloc(64 * 1024, fill);
  const sha256 = (buffers: Buffer[]) => buffers.reduce((h, b) => h.update(b), createHash('sha256')).digest('hex');

  it('frees a chunk that is the whole of its own memory, and nothing else', () => {
    const own = chunkOf(1);
    releaseChunk(own);
    expect(own.byteLength).toBe(0);
    // A view into a larger buffer, a slice of the shared pool and a small buffer stay as they are.
    const parent = chunkOf(2);
    const view = parent.subarray(10);
    releaseChunk(view);
    expect(view.byteLength).toBe(64 * 1024 - 10);
    const pooled = Buffer.from('pooled');
    releaseChunk(pooled);
    expect(pooled.toString()).toBe('pooled');
    const small = Buffer.alloc(4096, 3);
    releaseChunk(small);
    expect(small.byteLength).toBe(4096);
  });

  it('stores the same bytes with or without hand-over; only a hand-over frees the chunks', async () => {
    const fills = Array.from({ length: 40 }, (_, i) => i);
    const expected = sha256(fills.map(chunkOf));
    const readBack = async (key: string) => {
      const chunks: Buffer[] = [];
      for await (const c of store.open(key)) chunks.push(c as Buffer);
      return sha256(chunks);
    };
    const kept = fills.map(chunkOf);
    const keptKey = randomUUID();
    await store.put(keptKey, Readable.from(kept));
    expect(await readBack(keptKey)).toBe(expected);
    expect(kept.every((c) => c.byteLength === 64 * 1024)).toBe(true);

    const handed = fills.map(chunkOf);
    const handedKey = randomUUID();
    await store.put(handedKey, Readable.from(handed), { handOver: true });
    expect(await readBack(handedKey)).toBe(expected);
    expect(handed.every((c) => c.byteLength === 0)).toBe(true);
  });
});
