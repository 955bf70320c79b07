import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const FILES = '/api/v1/file/files';
export const PUBLIC = '/api/v1/file/public';

export const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

export const tempFilesDir = (): string => mkdtempSync(join(tmpdir(), 'tenantry-files-'));

/** Every regular file under dir, as paths relative to it (blobs and anything left under incoming/). */
export function filesUnder(dir: string, prefix = ''): string[] {
  let found: string[] = [];
  let names: string[];
  try {
    names = readdirSync(join(dir, prefix));
  } catch {
    return [];
  }
  for (const name of names) {
    const rel = prefix ? `${prefix}/${name}` : name;
    if (statSync(join(dir, rel)).isDirectory()) found = found.concat(filesUnder(dir, rel));
    else found.push(rel);
  }
  return found;
}

/** A multipart form built by hand, so its exact length is known and it can be sent slowly. */
export function form(parts: { name: string; filename?: string; type?: string; content: Buffer | string }[]): {
  body: Buffer;
  type: string;
} {
  const boundary = 'tenantry-file-boundary';
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ''}`;
    const type = part.type !== undefined ? `Content-Type: ${part.type}\r\n` : '';
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`),
      Buffer.from(part.content),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

export const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(24, 1)]);
