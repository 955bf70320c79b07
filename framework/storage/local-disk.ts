import { createWriteStream } from 'node:fs';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { problem, type ProblemError } from '../errors.ts';
import { releasingFs } from './chunk-release.ts';
import {
  assertBlobKey,
  isBlobKey,
  type BlobCapabilities,
  type BlobStat,
  type BlobStore,
  type ByteRange,
} from './blob-store.ts';

const SHARD = /^[0-9a-f]{2}$/;

/**
 * Blobs on the local disk under one directory: `<dir>/<first two hex digits>/<key>`, so no
 * directory grows past a few thousand entries. An upload is written to `<dir>/incoming/<random>`,
 * flushed to disk, renamed into place and the directory entry synced: a crash leaves at most a
 * stray file under incoming/, never a partial blob under a key.
 */
/** How much of an incoming blob may wait in memory for the disk. */
const WRITE_BUFFER_BYTES = 1024 * 1024;

export class LocalDiskStore implements BlobStore {
  static readonly capabilities: BlobCapabilities = { seekable: true, listable: true };
  readonly capabilities = LocalDiskStore.capabilities;
  readonly root: string;

  constructor(dir: string) {
    this.root = resolve(dir);
  }

  private relative(key: string): string {
    assertBlobKey(key);
    return `${key.slice(0, 2)}/${key}`;
  }

  async put(key: string, source: Readable, options: { handOver?: boolean } = {}): Promise<void> {
    const path = join(this.root, this.relative(key));
    const incoming = join(this.root, 'incoming');
    await mkdir(incoming, { recursive: true });
    const temporary = join(incoming, randomUUID());
    try {
      // flush: the bytes reach the disk before close, so the rename never publishes a partial blob.
      // A 1 MiB buffer lets the socket keep reading while earlier chunks are written (one writev
      // for what piled up), instead of pausing the upload after every 64 KiB chunk.
      // Handed-over chunks are freed once written, so a long upload's memory stays flat.
      const fs = options.handOver ? { fs: releasingFs } : {};
      await pipeline(
        source,
        createWriteStream(temporary, { flags: 'wx', flush: true, highWaterMark: WRITE_BUFFER_BYTES, ...fs }),
      );
      const shard = join(this.root, key.slice(0, 2));
      await mkdir(shard, { recursive: true });
      await rename(temporary, path);
      await syncDirectory(shard);
    } catch (err) {
      await rm(temporary, { force: true });
      throw isDiskFull(err) ? diskFull(err) : err;
    }
  }

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const s = await stat(join(this.root, this.relative(key)));
      return s.isFile() ? { size: s.size, mtime: s.mtime } : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  open(key: string, range?: ByteRange): Readable {
    return createReadStream(join(this.root, this.relative(key)), range ? { start: range.start, end: range.end } : {});
  }

  /** Writes a small file where uploads are written, and removes it. */
  async check(): Promise<void> {
    const incoming = join(this.root, 'incoming');
    await mkdir(incoming, { recursive: true });
    const probe = join(incoming, `${randomUUID()}.check`);
    try {
      await writeFile(probe, 'ok', { flag: 'wx' });
    } finally {
      await rm(probe, { force: true });
    }
  }

  async remove(key: string): Promise<boolean> {
    try {
      await rm(join(this.root, this.relative(key)));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  locate(key: string): { root: string; path: string } {
    return { root: this.root, path: this.relative(key) };
  }

  async *list(before: Date): AsyncIterable<string> {
    const shards = await readdir(this.root).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [] as string[];
      throw err;
    });
    for (const shard of shards.filter((s) => SHARD.test(s)).sort()) {
      for (const name of (await readdir(join(this.root, shard))).sort()) {
        if (!isBlobKey(name) || !name.startsWith(shard)) continue;
        const s = await stat(join(this.root, shard, name)).catch(() => null);
        if (s?.isFile() && s.mtime < before) yield name;
      }
    }
  }

  /** Removes what an interrupted put() left under incoming/ before `before` (a crash mid-upload). */
  async purgeIncomplete(before: Date): Promise<number> {
    const incoming = join(this.root, 'incoming');
    const names = await readdir(incoming).catch(() => [] as string[]);
    let removed = 0;
    for (const name of names) {
      const s = await stat(join(incoming, name)).catch(() => null);
      if (s && s.mtime < before) {
        await rm(join(incoming, name), { force: true });
        removed += 1;
      }
    }
    return removed;
  }
}

/** The filesystem has no room left (ENOSPC), or the service's user none of its quota (EDQUOT). */
const isDiskFull = (err: unknown): boolean => {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
};

/** 507 STORAGE_FULL: the upload is refused (its partial file is already removed), the cause kept for the log. */
function diskFull(cause: unknown): ProblemError {
  const err = problem('STORAGE_FULL', 'The file storage has no room left for this upload');
  (err as Error).cause = cause;
  return err;
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
