/**
 * A line diff for the shell's history: what a long text lost and gained between two versions,
 * line by line (the longest common subsequence of lines), as people read a document's changes.
 */

export interface DiffLine {
  kind: 'same' | 'removed' | 'added';
  text: string;
}

/** Past this many lines on either side the texts are shown whole, old then new: the table would cost too much. */
export const DIFF_MAX_LINES = 400;

/** Lines kept around each change; longer runs of unchanged lines fold into one "…" line. */
const CONTEXT = 2;

export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length > DIFF_MAX_LINES || b.length > DIFF_MAX_LINES) {
    return [
      ...a.map((text) => ({ kind: 'removed' as const, text })),
      ...b.map((text) => ({ kind: 'added' as const, text })),
    ];
  }
  // lengths[i][j]: the longest common subsequence of a[i..] and b[j..].
  const lengths: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i]![j] = a[i] === b[j] ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!);
    }
  }
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ kind: 'same', text: a[i]! });
      i++;
      j++;
    } else if (i < a.length && (j === b.length || lengths[i + 1]![j]! >= lengths[i]![j + 1]!)) {
      // What went comes before what came in its place.
      lines.push({ kind: 'removed', text: a[i]! });
      i++;
    } else {
      lines.push({ kind: 'added', text: b[j]! });
      j++;
    }
  }
  return folded(lines);
}

/** Unchanged lines far from any change become one "…" line. */
function folded(lines: DiffLine[]): DiffLine[] {
  const near = lines.map((_, k) =>
    lines.slice(Math.max(0, k - CONTEXT), k + CONTEXT + 1).some((line) => line.kind !== 'same'),
  );
  const out: DiffLine[] = [];
  lines.forEach((line, k) => {
    if (line.kind !== 'same' || near[k]) out.push(line);
    else if (out.at(-1)?.text !== '…' || out.at(-1)?.kind !== 'same') out.push({ kind: 'same', text: '…' });
  });
  return out;
}
