/**
 * The flags every command takes wherever they stand on the line (`service --json whoami` is
 * `service whoami --json`). The framework CLI reads them with this same function, so one
 * `service` line means the same thing whichever CLI runs it. `--` ends them: what follows is an
 * argument.
 */
export interface GlobalFlags {
  json: boolean;
  help: boolean;
  version: boolean;
  /** The arguments left once the global flags are taken out. */
  rest: string[];
}

export function takeGlobalFlags(argv: string[]): GlobalFlags {
  const flags: GlobalFlags = { json: false, help: false, version: false, rest: [] };
  let endOfOptions = false;
  for (const arg of argv) {
    if (endOfOptions) flags.rest.push(arg);
    else if (arg === '--') {
      endOfOptions = true;
      flags.rest.push(arg);
    } else if (arg === '--json') flags.json = true;
    else if (arg === '-h' || arg === '--help') flags.help = true;
    else if (arg === '-v' || arg === '--version') flags.version = true;
    else flags.rest.push(arg);
  }
  return flags;
}

/** The command and its arguments: the line without its global flags, and without a leading `--`. */
export function commandLine(flags: GlobalFlags): string[] {
  return flags.rest[0] === '--' ? flags.rest.slice(1) : flags.rest;
}

/** The error for a first word that names no command: an option (`--bogus`) is called one. */
export function unknownFirstWord(word: string): string {
  // `service ''` (an unset variable): "Unknown command: " would name nothing.
  if (word === '') return 'The command is empty: name one (service --help lists them)';
  const valued = globalFlagGivenValue(word);
  if (valued) return takesNoValue(valued);
  return `Unknown ${word.startsWith('-') ? 'option' : 'command'}: ${word}`;
}

/**
 * The error for `service help <command> <word>…`: help names one command, and a word after it
 * would else be dropped unread, as if the line meant something it does not.
 */
export function helpTakesOneCommand(word: string): string {
  return `Unexpected argument: ${word} (service help takes one command)`;
}

/** The global flag `arg` gives a value to (`--json=false` -> `--json`), or null. */
export function globalFlagGivenValue(arg: string): string | null {
  const name = /^(--json|--help|--version)=/.exec(arg)?.[1];
  return name ?? null;
}

/**
 * A global flag given a value: said the same wherever it stands on the line, since the flags
 * are taken only as bare words and `--json=false` is otherwise left for the command to refuse.
 */
export function takesNoValue(flag: string): string {
  return `${flag} takes no value: write ${flag} alone, or leave it out`;
}
