import { createParser } from 'eventsource-parser';
import type { Quantities } from '../billing/pricing.js';
import type { ProviderDialect } from '../store/database.js';

/**
 * Reads what a call used from the upstream response as it streams past, without holding it up:
 * JSON bodies are parsed once complete, event streams event by event (the usage of a streamed
 * completion arrives in its last events).
 *
 * - `openai`: `usage.prompt_tokens` / `completion_tokens` (chat completions) or `input_tokens` /
 *   `output_tokens` (responses API, also inside `response.completed`).
 * - `anthropic`: `usage.input_tokens` (+ cache creation and cache reads) and `output_tokens`;
 *   streamed, the input from `message_start` and the running output total from `message_delta`.
 * - `per_call`: one call.
 *
 * @see docs/proxy.md "Metering"
 */
export interface UsageObserver {
  observe(chunk: Uint8Array): void;
  /** Token counts reported by the upstream, or null when it reported none. */
  finish(): Quantities | null;
}

/** A JSON body up to this size is parsed whole; past it, its usage is read from its tail. */
const MAX_JSON_BYTES = 8 * 1024 * 1024;
/** How much of the end of a larger JSON body is kept: its `usage` object comes last. */
const TAIL_BYTES = 64 * 1024;

/**
 * `eventStream`: the answer is `text/event-stream`. `json`: its type says JSON, the only kind of
 * large answer whose tail is read for usage (a large file's contents may hold anything).
 */
export function createUsageObserver(
  dialect: ProviderDialect,
  eventStream: boolean,
  json = true,
): UsageObserver {
  if (dialect === 'per_call') return { observe() {}, finish: () => ({}) };
  const tokens = { input: undefined as number | undefined, output: undefined as number | undefined };
  const read = dialect === 'anthropic' ? readAnthropic : readOpenAi;
  const decoder = new TextDecoder();

  if (eventStream) {
    const parser = createParser({
      onEvent: (event) => {
        // Every dialect reports usage under `*_tokens` names: the other events (the content,
        // most of a stream) are not parsed at all.
        if (!event.data.includes('_tokens')) return;
        const value = parseJson(event.data);
        if (value) read(value, tokens);
      },
    });
    return {
      observe: (chunk) => parser.feed(decoder.decode(chunk, { stream: true })),
      finish: () => quantitiesOf(tokens),
    };
  }

  // Every chunk while the body may still be parsed whole; past that, only the last ones covering
  // `TAIL_BYTES` (a large answer, such as many embeddings, is not held in memory).
  const chunks: Uint8Array[] = [];
  let size = 0;
  let kept = 0;
  return {
    observe(chunk) {
      size += chunk.byteLength;
      chunks.push(chunk);
      kept += chunk.byteLength;
      if (size <= MAX_JSON_BYTES) return;
      while (chunks.length > 1 && kept - chunks[0]!.byteLength >= TAIL_BYTES)
        kept -= chunks.shift()!.byteLength;
    },
    finish() {
      const text = decoder.decode(concat(chunks, kept));
      const value = size <= MAX_JSON_BYTES ? parseJson(text) : json ? usageInTail(text) : undefined;
      if (value) read(value, tokens);
      return quantitiesOf(tokens);
    },
  };
}

/**
 * `{ usage }` from the end of a JSON body too large to parse whole: its last `"usage": { … }`
 * member, when that is a member of the outermost object. The text may begin inside a string, but
 * a key is found only where a string cannot be: a quote inside a string is always escaped, so
 * `,"usage":{` or `{"usage":{` with bare quotes is a member, never text an answer echoes; and
 * what follows the member must close the outermost object and nothing else (a usage nested
 * deeper, in a list of results say, is not this call's).
 */
function usageInTail(text: string): Record<string, unknown> | undefined {
  let start = -1;
  for (const match of text.matchAll(/[{,]\s*"usage"\s*:\s*(?=\{)/g)) start = match.index + match[0].length;
  if (start < 0) return undefined;
  const end = closingOf(text, start, 0);
  if (end < 0 || closingOf(text, end + 1, 1) !== text.trimEnd().length - 1) return undefined;
  const usage = parseJson(text.slice(start, end + 1));
  return usage ? { usage } : undefined;
}

/**
 * Where the text, read from `from` at `depth` levels inside (outside every string), first comes
 * back out to level 0: the index of that closing bracket, or -1 when the text ends first.
 */
function closingOf(text: string, from: number, depth: number): number {
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') depth++;
    else if ((char === '}' || char === ']') && --depth === 0) return i;
  }
  return -1;
}

interface Tokens {
  input: number | undefined;
  output: number | undefined;
}

function readOpenAi(value: Record<string, unknown>, tokens: Tokens): void {
  const usage = (asObject(value.usage) ?? asObject(asObject(value.response)?.usage)) as
    | Record<string, unknown>
    | undefined;
  if (!usage) return;
  const input = count(usage.prompt_tokens) ?? count(usage.input_tokens);
  const output = count(usage.completion_tokens) ?? count(usage.output_tokens);
  if (input !== undefined) tokens.input = input;
  if (output !== undefined) tokens.output = output;
}

function readAnthropic(value: Record<string, unknown>, tokens: Tokens): void {
  const usage = asObject(value.usage) ?? asObject(asObject(value.message)?.usage);
  if (!usage) return;
  const fresh = count(usage.input_tokens);
  if (fresh !== undefined) {
    tokens.input =
      fresh + (count(usage.cache_creation_input_tokens) ?? 0) + (count(usage.cache_read_input_tokens) ?? 0);
  }
  const output = count(usage.output_tokens);
  if (output !== undefined) tokens.output = output;
}

function quantitiesOf(tokens: Tokens): Quantities | null {
  if (tokens.input === undefined && tokens.output === undefined) return null;
  return { input_tokens: tokens.input ?? 0, output_tokens: tokens.output ?? 0 };
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    return asObject(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
