import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { LogLine } from './deployer.js';

/** The longest line kept; the rest of a longer one is cut (a runaway line must not fill memory). */
const MAX_LINE_CHARS = 4096;

/**
 * Calls `onLine` with each line `source` writes (`\n`, `\r\n` or `\r` ends one), cut at
 * MAX_LINE_CHARS as it arrives. Not `readline`: it holds a line whole until it ends, so a process
 * writing on without a line break would grow the platform's memory until it gave out.
 */
export function followLines(source: Readable, onLine: (line: string) => void): void {
  const decoder = new StringDecoder('utf8');
  let line = '';
  let afterReturn = false;
  const add = (part: string) => {
    if (line.length < MAX_LINE_CHARS) line += part.slice(0, MAX_LINE_CHARS - line.length);
  };
  source.on('data', (chunk: Buffer) => {
    let text = decoder.write(chunk);
    // A `\r\n` split between two chunks ends one line, not two.
    if (afterReturn && text.startsWith('\n')) text = text.slice(1);
    if (text === '') return;
    afterReturn = text.endsWith('\r');
    const parts = text.split(/\r\n|\r|\n/);
    for (const part of parts.slice(0, -1)) {
      add(part);
      onLine(line);
      line = '';
    }
    add(parts.at(-1)!);
  });
  source.on('end', () => {
    add(decoder.end());
    if (line) onLine(line);
  });
}

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
