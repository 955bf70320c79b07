import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { Readable } from 'node:stream';

const CHUNK = Buffer.alloc(1024 * 1024, 0x5a);
const BOUNDARY = 'tenantry-bench-upload';

/** A multipart form with one file part of `mib` MiB, generated as it is sent (never held in memory). */
function uploadForm(mib: number): { body: () => Readable; length: number; type: string } {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="bench.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  function* parts() {
    yield head;
    for (let i = 0; i < mib; i++) yield CHUNK;
    yield tail;
  }
  return {
    body: () => Readable.from(parts(), { objectMode: false }),
    length: head.length + tail.length + mib * CHUNK.length,
    type: `multipart/form-data; boundary=${BOUNDARY}`,
  };
}

/** Resident set size of a process in bytes (Linux /proc), or null where it cannot be read. */
function rssOf(pid: number): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

export interface UploadFigures {
  mbPerSecond: number;
  /** Peak RSS during the upload minus RSS before it, in bytes; null without /proc. */
  rssGrowth: number | null;
}

/** Sends one upload, timing it and sampling the receiving process's RSS every 20 ms. */
export async function measureUpload(
  port: number,
  path: string,
  headers: Record<string, string>,
  mib: number,
  pid: number,
): Promise<UploadFigures> {
  const form = uploadForm(mib);
  const before = rssOf(pid);
  let peak = before ?? 0;
  const sampler = setInterval(() => {
    const now = rssOf(pid);
    if (now !== null && now > peak) peak = now;
  }, 20);
  const started = performance.now();
  try {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path,
          headers: { ...headers, 'content-type': form.type, 'content-length': form.length },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            res.statusCode === 201
              ? resolve(201)
              : reject(
                  new Error(`upload answered ${res.statusCode}: ${Buffer.concat(chunks).toString().slice(0, 300)}`),
                ),
          );
        },
      );
      req.on('error', reject);
      form.body().pipe(req);
    });
    void status;
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  return { mbPerSecond: form.length / 1e6 / seconds, rssGrowth: before === null ? null : peak - before };
}
