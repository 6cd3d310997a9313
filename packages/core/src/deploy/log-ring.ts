import type { LogLine } from './deployer.js';

/** The longest line kept; the rest of a longer one is cut (a runaway line must not fill memory). */
const MAX_LINE_CHARS = 4096;

/** The last `capacity` log lines of one deployment, oldest first. */
export class LogRing {
  readonly #lines: LogLine[] = [];
  #next = 0;

  constructor(private readonly capacity: number) {}

  push(stream: LogLine['stream'], line: string, at = new Date()): void {
    const entry = { at: at.toISOString(), stream, line: line.slice(0, MAX_LINE_CHARS) };
    if (this.#lines.length < this.capacity) this.#lines.push(entry);
    else this.#lines[this.#next] = entry;
    this.#next = (this.#next + 1) % this.capacity;
  }

  tail(count: number): LogLine[] {
    const ordered =
      this.#lines.length < this.capacity
        ? this.#lines
        : [...this.#lines.slice(this.#next), ...this.#lines.slice(0, this.#next)];
    return count <= 0 ? [] : ordered.slice(-count);
  }
}
