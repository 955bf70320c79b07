/**
 * The seven renderable types a download may show inline, and whether the first bytes of an upload
 * agree with the declared one. Every other declared type is downloaded as an attachment and not
 * checked: its bytes cannot be rendered by a browser under our origin.
 */
export const RENDERABLE_TYPES = [
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'application/pdf',
  'text/plain',
] as const;

const RENDERABLE: ReadonlySet<string> = new Set(RENDERABLE_TYPES);

/** The type/subtype of a media type, lower-cased, without parameters. */
export const essence = (mediaType: string): string => mediaType.split(';', 1)[0]!.trim().toLowerCase();

export const isRenderable = (mediaType: string): boolean => RENDERABLE.has(essence(mediaType));

/** Bytes of the head an upload keeps for sniffing. */
export const SNIFF_BYTES = 4100;

const startsWith = (head: Buffer, bytes: readonly number[], at = 0): boolean =>
  bytes.every((b, i) => head[at + i] === b);
const ascii = (head: Buffer, text: string, at = 0): boolean =>
  head.subarray(at, at + text.length).toString('latin1') === text;

/** Signatures of the binary renderable types (as file-type detects them). */
const SIGNATURES: Readonly<Record<string, (head: Buffer) => boolean>> = {
  'image/png': (h) => startsWith(h, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  'image/jpeg': (h) => startsWith(h, [0xff, 0xd8, 0xff]),
  'image/gif': (h) => ascii(h, 'GIF87a') || ascii(h, 'GIF89a'),
  'image/webp': (h) => ascii(h, 'RIFF') && ascii(h, 'WEBP', 8),
  // An ISO-BMFF file whose major brand (or a compatible one) is avif / avis.
  'image/avif': (h) =>
    ascii(h, 'ftyp', 4) && /avi[fs]/.test(h.subarray(8, Math.min(h.length, h.readUInt32BE(0) || 0)).toString('latin1')),
  'application/pdf': (h) => ascii(h, '%PDF-'),
};

/**
 * Checks an upload's bytes against its declared renderable type. `head` is the first SNIFF_BYTES
 * bytes; text/plain is decided by `text` (the whole upload was valid UTF-8 with no NUL).
 */
export function bytesAgree(mediaType: string, head: Buffer, text: boolean): boolean {
  const type = essence(mediaType);
  if (type === 'text/plain') return text;
  const signature = SIGNATURES[type];
  if (!signature) return true;
  return head.length >= 4 && signature(head);
}

/** Follows an upload chunk by chunk: is it valid UTF-8 with no NUL byte? */
export class PlainTextCheck {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  ok = true;

  update(chunk: Buffer): void {
    if (!this.ok) return;
    if (chunk.includes(0)) {
      this.ok = false;
      return;
    }
    try {
      this.decoder.decode(chunk, { stream: true });
    } catch {
      this.ok = false;
    }
  }

  finish(): boolean {
    if (!this.ok) return false;
    try {
      this.decoder.decode();
      return true;
    } catch {
      return false;
    }
  }
}
