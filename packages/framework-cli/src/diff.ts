/** A unified diff of two texts (line-based LCS, three lines of context): what refine shows. */
export function unifiedDiff(path: string, before: string, after: string, context = 3): string {
  if (before === after) return '';
  const a = splitLines(before);
  const b = splitLines(after);
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  // oldBefore/newBefore: lines of each side consumed before this op.
  type Op = { kind: ' ' | '-' | '+'; text: string; oldBefore: number; newBefore: number };
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const at = { oldBefore: i, newBefore: j };
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ kind: ' ', text: a[i]!, ...at });
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! > lcs[i + 1]![j]!)) {
      ops.push({ kind: '+', text: b[j++]!, ...at });
    } else ops.push({ kind: '-', text: a[i++]!, ...at });
  }
  const out = [`--- a/${path}`, `+++ b/${path}`];
  let k = 0;
  while (k < ops.length) {
    if (ops[k]!.kind === ' ') {
      k++;
      continue;
    }
    const start = Math.max(0, k - context);
    let end = k;
    // Extend the hunk while changes are closer than twice the context.
    while (end < ops.length) {
      if (ops[end]!.kind !== ' ') {
        end++;
        continue;
      }
      let run = end;
      while (run < ops.length && ops[run]!.kind === ' ') run++;
      if (run === ops.length || run - end > 2 * context) {
        end = Math.min(ops.length, end + context);
        break;
      }
      end = run;
    }
    const hunk = ops.slice(start, end);
    const oldCount = hunk.filter((o) => o.kind !== '+').length;
    const newCount = hunk.filter((o) => o.kind !== '-').length;
    const first = hunk[0]!;
    // An empty side names the line before the hunk, as diff(1) does.
    const oldStart = first.oldBefore + (oldCount ? 1 : 0);
    const newStart = first.newBefore + (newCount ? 1 : 0);
    out.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`);
    for (const op of hunk) out.push(`${op.kind}${op.text}`);
    k = end;
  }
  return `${out.join('\n')}\n`;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
