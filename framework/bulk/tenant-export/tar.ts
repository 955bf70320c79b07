/**
 * The few parts of a POSIX ustar archive (POSIX.1-1988, IEEE Std 1003.1) a tenant's export
 * writes: regular files whose size is known before their bytes, under names of at most 100
 * bytes. Written by hand because it is that small: a 512-byte header per entry, the bytes padded
 * to a 512-byte block, and two zero blocks at the end. Every tar reader (GNU tar, bsdtar, Python's
 * tarfile, the tar packages of npm) reads it.
 */

const BLOCK = 512;

/** The header block of one regular file. */
export function tarHeader(name: string, size: number, mtime: Date): Buffer {
  const header = Buffer.alloc(BLOCK);
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name longer than 100 bytes: ${name}`);
  header.write(name, 0, 100, 'utf8');
  octal(header, 100, 8, 0o644);
  octal(header, 108, 8, 0);
  octal(header, 116, 8, 0);
  octal(header, 124, 12, size);
  octal(header, 136, 12, Math.floor(mtime.getTime() / 1000));
  // The checksum is summed with its own field as eight spaces.
  header.fill(0x20, 148, 156);
  header.write('0', 156, 1, 'ascii');
  header.write('ustar\u0000', 257, 6, 'ascii');
  header.write('00', 263, 2, 'ascii');
  header.write('tenantry', 265, 32, 'ascii');
  header.write('tenantry', 297, 32, 'ascii');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8, 'ascii');
  return header;
}

function octal(header: Buffer, offset: number, length: number, value: number): void {
  header.write(`${value.toString(8).padStart(length - 1, '0')}\u0000`, offset, length, 'ascii');
}

/** The zero bytes that pad an entry of this size to a whole block. */
export const tarPadding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/** The end of an archive: two zero blocks. */
export const tarEnd = (): Buffer => Buffer.alloc(2 * BLOCK);
