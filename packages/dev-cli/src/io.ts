import { homedir } from 'node:os';

/** A writable terminal stream, as much of it as the CLI uses. */
export interface OutputStream {
  write(text: string | Uint8Array): unknown;
  isTTY?: boolean;
  columns?: number;
  rows?: number;
  on?(event: 'resize', listener: () => void): unknown;
  off?(event: 'resize', listener: () => void): unknown;
}

/** Standard input, as much of it as the CLI uses. */
export interface InputStream extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

/**
 * Everything a command touches outside itself. The bin passes the real process; tests pass their
 * own streams, environment and folders, so commands run in-process against real servers.
 */
export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: InputStream;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Opens a URL in the user's browser; false when none could be started. */
  openUrl(url: string): Promise<boolean>;
  /** How long `login` waits for the browser. Default 5 minutes (the CLI contract's); tests shorten it. */
  loginTimeoutMs?: number;
  /** `--json` was given: the command prints one JSON object on stdout (errors too). */
  json?: boolean;
}

/** `${HOME}/.service`: the CLI's config folder (no XDG, as the CLI contract says). */
export function serviceDir(io: CliIo): string {
  return `${io.env.HOME?.trim() || homedir()}/.service`;
}

/** Color only on a terminal, and never when `NO_COLOR` is set to anything but empty, or TERM is dumb. */
export function useColor(io: CliIo, stream: OutputStream = io.stdout): boolean {
  return stream.isTTY === true && !io.env.NO_COLOR && io.env.TERM !== 'dumb';
}

/** Styling that collapses to plain text when color is off. */
export function styles(io: CliIo, stream: OutputStream = io.stdout) {
  const on = useColor(io, stream);
  const wrap = (open: number, close: number) => (text: string) =>
    on ? `\u001b[${open}m${text}\u001b[${close}m` : text;
  return {
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
  };
}

/**
 * Text from the platform made safe to print on a terminal: control characters (ESC sequences
 * that move the cursor, recolour or retitle the terminal) are shown as U+FFFD, never sent as they
 * are. A workspace's name is chosen by its owner, not by the person reading it.
 */
export function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '\ufffd');
}
