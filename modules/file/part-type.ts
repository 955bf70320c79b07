import type { Readable } from 'node:stream';

/**
 * Whether the form's file part declared a Content-Type at all. The form parser (busboy) gives a
 * part without one the type text/plain (RFC 7578's default for a form field), indistinguishable
 * from a part that said text/plain; a file without a declared type is application/octet-stream
 * here (docs/files.md), so the part's own headers are read.
 *
 * The watch sees the request body's chunks as the parser gets them (a 'data' listener beside the
 * parser's pipe, so never later than the parser), copies at most HEAD_BYTES of them, and finds the
 * header block of the first part the parser treats as a file: one whose Content-Disposition names
 * a filename. Call it right after `request.files()` (which starts the parser) and stop it once that
 * has answered, before any byte of the file is stored: it keeps no chunk of its own.
 */
export interface PartTypeWatch {
  /** true or false once the file part's headers were seen; undefined otherwise (the parser's type stands). */
  declared(): boolean | undefined;
  stop(): void;
}

/** The file part's headers are looked for within this many bytes from the start of the body. */
const HEAD_BYTES = 64 * 1024;

const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');

export function watchPartType(body: Readable, contentType: string | undefined): PartTypeWatch {
  const boundary = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
  const token = boundary?.[1] ?? boundary?.[2];
  let result: boolean | undefined;
  let done = token === undefined;
  let seen = Buffer.alloc(0);
  const first = Buffer.from(`--${token ?? ''}`);
  const next = Buffer.from(`\r\n--${token ?? ''}`);

  const look = (): void => {
    let at = seen.indexOf(first);
    while (at !== -1) {
      const lineEnd = seen.indexOf(CRLF, at + first.length);
      if (lineEnd === -1) return;
      // The closing delimiter: no file part.
      if (seen[at + first.length] === 0x2d && seen[at + first.length + 1] === 0x2d) {
        done = true;
        return;
      }
      const blockEnd = seen.subarray(lineEnd, lineEnd + 4).equals(HEADERS_END)
        ? lineEnd
        : seen.indexOf(HEADERS_END, lineEnd);
      if (blockEnd === -1) return;
      const lines = blockEnd === lineEnd ? [] : seen.toString('latin1', lineEnd + 2, blockEnd).split('\r\n');
      const disposition = lines.find((line) => /^content-disposition\s*:/i.test(line));
      if (disposition && /;\s*filename\*?\s*=/i.test(disposition)) {
        result = lines.some((line) => /^content-type\s*:\s*\S/i.test(line));
        done = true;
        return;
      }
      at = seen.indexOf(next, blockEnd);
      if (at !== -1) at += 2;
    }
  };

  const onData = (chunk: Buffer): void => {
    if (done) return;
    const room = HEAD_BYTES - seen.length;
    // A copy: the body's chunks are handed over to the store, which frees them once written.
    seen = Buffer.concat([seen, chunk.subarray(0, Math.max(room, 0))]);
    look();
    if (!done && seen.length >= HEAD_BYTES) done = true;
    if (done) stop();
  };
  const stop = (): void => {
    done = true;
    seen = Buffer.alloc(0);
    body.removeListener('data', onData);
  };
  if (!done) body.on('data', onData);
  return { declared: () => result, stop };
}
