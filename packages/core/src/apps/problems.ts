/** Problems with a document, each at a path the agent can find (`root.children[1].props.value`). */
export interface Problem {
  path: string;
  message: string;
}

/** `['root', 'children', 1, 'props']` as `root.children[1].props`. */
export function pathOf(parts: readonly PropertyKey[]): string {
  let text = '';
  for (const part of parts) {
    if (typeof part === 'number') text += `[${part}]`;
    else text += text === '' ? String(part) : `.${String(part)}`;
  }
  return text;
}

/** A path with more parts appended. */
export const under = (path: string, ...parts: PropertyKey[]): string =>
  pathOf([...(path === '' ? [] : [path]), ...parts]);

/** Collects problems up to a cap, so a document with thousands of faults is answered briefly. */
export class ProblemList {
  readonly problems: Problem[] = [];
  private dropped = 0;

  constructor(private readonly cap: number) {}

  add(path: string, message: string): void {
    if (this.problems.length < this.cap) this.problems.push({ path, message });
    else this.dropped += 1;
  }

  /** The problems, the last one counting those past the cap. */
  list(): Problem[] {
    if (this.dropped === 0) return this.problems;
    return [...this.problems, { path: '', message: `and ${this.dropped} more problems not listed` }];
  }

  get empty(): boolean {
    return this.problems.length === 0;
  }
}

/** Up to `max` names for a message, and how many more there are. */
export function nameList(names: Iterable<string>, max = 20): string {
  const all = [...names];
  if (all.length === 0) return 'none';
  const shown = all.slice(0, max).join(', ');
  return all.length > max ? `${shown} and ${all.length - max} more` : shown;
}
