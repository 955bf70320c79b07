import { close, fsync, open, write, writev } from 'node:fs';

const RELEASE_FROM_BYTES = 16 * 1024;

/**
 * Frees a chunk's memory now instead of at V8's next collection, by detaching the ArrayBuffer it
 * spans. Only for a chunk that is the whole of its own ArrayBuffer (a request body chunk: Node's
 * HTTP parser copies each into a fresh buffer), so a view of somebody else's memory, or a slice of
 * Buffer's shared pool (never its whole), is not touched; small chunks are left to the collector. Without it a 1 GiB upload passes
 * through some 16,000 garbage 64 KiB buffers, and V8 collects external memory only after about
 * 64 MiB of it has piled up (docs/performance.md, "Upload").
 */
export function releaseChunk(chunk: Buffer): void {
  const memory = chunk.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer; detached?: boolean };
  if (typeof memory.transfer !== 'function' || memory.detached) return;
  if (chunk.byteOffset !== 0 || chunk.byteLength !== memory.byteLength || memory.byteLength < RELEASE_FROM_BYTES)
    return;
  memory.transfer(0);
}

type WriteCallback<B> = (err: NodeJS.ErrnoException | null, written: number, buffers: B) => void;

/**
 * fs methods for createWriteStream (its documented `fs` option) that release each chunk once all
 * of its bytes are written. After a short write (a disk filling up) nothing is released: the
 * stream writes the rest from the buffers the callback hands back (all of them, for writev), so
 * those are passed on untouched. `fsync` is there for the stream's `flush` option.
 */
export const releasingFs = {
  open,
  close,
  fsync,
  write: (
    fd: number,
    buffer: Buffer,
    offset: number,
    length: number,
    position: number | null,
    done: WriteCallback<Buffer>,
  ) =>
    write(fd, buffer, offset, length, position, (err, written) => {
      if (!err && offset === 0 && written === buffer.byteLength) releaseChunk(buffer);
      done(err, written, buffer);
    }),
  writev: (fd: number, buffers: Buffer[], position: number | null, done: WriteCallback<Buffer[]>) =>
    writev(fd, buffers, position, (err, written) => {
      const total = buffers.reduce((sum, buffer) => sum + buffer.byteLength, 0);
      if (!err && written === total) for (const buffer of buffers) releaseChunk(buffer);
      done(err, written, buffers);
    }),
};
