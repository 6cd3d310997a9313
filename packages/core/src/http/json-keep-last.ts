/**
 * Reading a JSON object of which one array field matters only by its last element, without
 * holding the rest. A chat client that re-sends its whole history on every turn (useChat does)
 * then costs the server the last message, not the conversation.
 *
 * The body streams through a byte-level scanner that checks the whole text is JSON and keeps
 * only the top-level members other than the field, and the bytes of the field's current last
 * element (an element's bytes are dropped when the next one starts). The kept pieces are
 * reassembled into a small JSON text and parsed under the input guard, so the caller gets what
 * `parseJsonInput` gives for the whole body, with the field's array cut to its last element.
 * A top-level value that is not an object, or a field that is not an array, is kept as it is.
 *
 * Each kept piece is capped (the other members together, the last element, a value kept whole);
 * the body as a whole has its own, larger cap.
 */
import { BodyCutShortError, BodyTooLargeError } from './body.js';
import { type JsonInput, MAX_JSON_DEPTH, parseJsonInput } from './input-guard.js';

export interface KeepLastLimits {
  /** Cap on each kept piece: the other members together, the last element, a value kept whole. */
  maxPieceBytes: number;
  /** Cap on the whole body; a declared `Content-Length` past it is refused unread. */
  maxTotalBytes: number;
  /** The error for a body past a cap, in the caller's terms; `limit` says which cap. */
  tooLarge?: (limit: 'piece' | 'total') => Error;
}

/**
 * The body parsed as `parseJsonInput` does, except that the top-level `field`, when it is an
 * array, holds only its last element. Syntax errors anywhere in the body are found (reading
 * stops at the first); a body past a cap throws the caller's `tooLarge` error.
 */
export async function readJsonKeepingLast(
  request: Request,
  field: string,
  limits: KeepLastLimits,
): Promise<JsonInput> {
  const refuse = (limit: 'piece' | 'total') =>
    limits.tooLarge?.(limit) ??
    new BodyTooLargeError(limit === 'piece' ? limits.maxPieceBytes : limits.maxTotalBytes);
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > limits.maxTotalBytes) throw refuse('total');
  const scanner = new KeepLastScanner(field, { maxPieceBytes: limits.maxPieceBytes });
  let text = '';
  try {
    if (request.body) {
      const reader = request.body.getReader();
      let size = 0;
      try {
        for (;;) {
          const { done, value } = await reader.read().catch((error: unknown) => {
            // The client went away before its body's end.
            throw new BodyCutShortError({ cause: error });
          });
          if (done) break;
          size += value.byteLength;
          if (size > limits.maxTotalBytes) throw refuse('total');
          scanner.write(value);
        }
      } catch (error) {
        await reader.cancel().catch(() => {});
        throw error;
      }
    }
    text = scanner.end();
  } catch (error) {
    if (!(error instanceof JsonScanError)) throw error;
    if (error.problem === 'piece') throw refuse('piece');
    if (error.problem === 'depth') {
      return { ok: false, reason: 'guard', message: `body nests deeper than ${MAX_JSON_DEPTH} levels` };
    }
    return { ok: false, reason: 'syntax', message: 'body must be valid JSON' };
  }
  return parseJsonInput(text);
}

/** Why the scanner stopped: not JSON, nested past the cap, or a kept piece past its cap. */
export class JsonScanError extends Error {
  override name = 'JsonScanError';
  constructor(readonly problem: 'syntax' | 'depth' | 'piece') {
    super(`JSON scan failed: ${problem}`);
  }
}

// Where the scanner is in the grammar: what the next byte may be.
const VALUE = 0; // a value (top level, after ':', after ',' in an array)
const VALUE_OR_CLOSE = 1; // after '[': a value or ']'
const KEY_OR_CLOSE = 2; // after '{': a key or '}'
const KEY = 3; // after ',' in an object
const COLON = 4;
const AFTER_VALUE = 5; // ',' or the closing bracket; at the top level, only whitespace
const STRING = 6;
const ESCAPE = 7;
const UNICODE = 8; // the hex digits of \uXXXX
const LITERAL = 9; // the rest of true, false or null
const NUM_MINUS = 10; // after '-': a digit
const NUM_ZERO = 11; // after a leading 0: '.', 'e' or the end
const NUM_INT = 12;
const NUM_DOT = 13; // after '.': a digit
const NUM_FRAC = 14;
const NUM_E = 15; // after 'e': a sign or a digit
const NUM_E_SIGN = 16; // after the exponent's sign: a digit
const NUM_EXP = 17;
const BOM = 18; // the UTF-8 byte order mark a decoder drops, at the very start

// Where the bytes being scanned go.
const DROP = 0;
const MEMBER = 1; // the current top-level member other than the field, as `"key":value`
const ELEMENT = 2; // the field's current element
const FIELD_VALUE = 3; // the field's value when it is not an array
const WHOLE = 4; // a top-level value that is not an object

const OBJECT = 1;
const ARRAY = 2;

const BOM_BYTES = [0xef, 0xbb, 0xbf];
const LITERALS: Record<number, number[]> = {
  116: [...'true'].map((c) => c.charCodeAt(0)),
  102: [...'false'].map((c) => c.charCodeAt(0)),
  110: [...'null'].map((c) => c.charCodeAt(0)),
};
const NO_BYTES = new Uint8Array(0);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The incremental scanner behind `readJsonKeepingLast`: `write` each chunk as it arrives, then
 * `end` for the reassembled JSON text (empty for a blank body). Both throw `JsonScanError`.
 */
export class KeepLastScanner {
  readonly #field: string;
  readonly #maxPieceBytes: number;
  readonly #maxDepth: number;
  readonly #containers: Uint8Array;
  #depth = 0;
  #state = BOM;
  #bomSeen = 0;
  #literal: number[] = [];
  #literalAt = 0;
  #hexLeft = 0;
  #stringIsKey = false;
  /** Set by an error or by `end`: the scanner takes no more. */
  #closed = false;

  // Routing: bytes from #runStart of the current chunk go to #sink.
  #chunk: Uint8Array = NO_BYTES;
  #runStart = 0;
  #sink = DROP;

  // What is kept.
  #topIsObject = false;
  #whole = new ByteBuffer();
  #member = new ByteBuffer();
  #members: Uint8Array[] = [];
  #membersBytes = 0;
  #memberIsField = false;
  #inFieldArray = false;
  #fieldKind: 'array' | 'value' | null = null;
  #fieldValue = new ByteBuffer();
  #element = new ByteBuffer();
  #hasElement = false;
  #elementTooLarge = false;

  constructor(field: string, options: { maxPieceBytes: number; maxDepth?: number }) {
    this.#field = field;
    this.#maxPieceBytes = options.maxPieceBytes;
    this.#maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
    this.#containers = new Uint8Array(this.#maxDepth + 1);
  }

  /** Bytes the scanner holds now, what it keeps and the room its buffers have grown to. */
  get heldBytes(): number {
    const buffers = [this.#whole, this.#member, this.#fieldValue, this.#element];
    return buffers.reduce((sum, buffer) => sum + buffer.capacity, this.#membersBytes);
  }

  write(chunk: Uint8Array): void {
    if (this.#closed) throw new JsonScanError('syntax');
    try {
      this.#scan(chunk);
    } catch (error) {
      this.#closed = true;
      throw error;
    }
  }

  end(): string {
    if (this.#closed) throw new JsonScanError('syntax');
    this.#closed = true;
    const state = this.#state;
    // A number at the very end has had no byte after it to end it.
    if (state === NUM_ZERO || state === NUM_INT || state === NUM_FRAC || state === NUM_EXP)
      this.#valueEnded(0);
    // Part of a byte order mark decodes to U+FFFD: not JSON, and not blank.
    if (state === BOM && this.#bomSeen > 0) throw new JsonScanError('syntax');
    if ((state === VALUE || state === BOM) && this.#depth === 0) return '';
    if (this.#state !== AFTER_VALUE || this.#depth !== 0) throw new JsonScanError('syntax');
    return decoder.decode(this.#reassembled());
  }

  #scan(chunk: Uint8Array): void {
    this.#chunk = chunk;
    this.#runStart = 0;
    const n = chunk.length;
    let i = 0;
    while (i < n) {
      const b = chunk[i]!;
      switch (this.#state) {
        case STRING: {
          // The hot path: most of a chat body is text inside strings.
          let j = i;
          while (j < n) {
            const c = chunk[j]!;
            if (c === 0x22 || c === 0x5c || c < 0x20) break;
            j++;
          }
          if (j === n) {
            i = n;
            break;
          }
          const c = chunk[j]!;
          if (c === 0x22) {
            if (this.#stringIsKey) {
              this.#keyEnded(j + 1);
              this.#state = COLON;
            } else {
              this.#valueEnded(j + 1);
            }
          } else if (c === 0x5c) {
            this.#state = ESCAPE;
          } else {
            throw new JsonScanError('syntax'); // a raw control character
          }
          i = j + 1;
          break;
        }
        case ESCAPE:
          if (b === 0x75) {
            this.#state = UNICODE;
            this.#hexLeft = 4;
          } else if (isEscapable(b)) {
            this.#state = STRING;
          } else {
            throw new JsonScanError('syntax');
          }
          i++;
          break;
        case UNICODE:
          if (!isHex(b)) throw new JsonScanError('syntax');
          if (--this.#hexLeft === 0) this.#state = STRING;
          i++;
          break;
        case BOM:
          if (b === BOM_BYTES[this.#bomSeen]) {
            if (++this.#bomSeen === BOM_BYTES.length) this.#state = VALUE;
            i++;
          } else if (this.#bomSeen > 0) {
            throw new JsonScanError('syntax');
          } else {
            this.#state = VALUE;
          }
          break;
        case VALUE:
          if (!isWhitespace(b)) this.#startValue(b, i);
          i++;
          break;
        case VALUE_OR_CLOSE:
          if (b === 0x5d) this.#close(i);
          else if (!isWhitespace(b)) this.#startValue(b, i);
          i++;
          break;
        case KEY_OR_CLOSE:
          if (b === 0x7d) this.#close(i);
          else if (b === 0x22) this.#startKey(i);
          else if (!isWhitespace(b)) throw new JsonScanError('syntax');
          i++;
          break;
        case KEY:
          if (b === 0x22) this.#startKey(i);
          else if (!isWhitespace(b)) throw new JsonScanError('syntax');
          i++;
          break;
        case COLON:
          if (b === 0x3a) this.#state = VALUE;
          else if (!isWhitespace(b)) throw new JsonScanError('syntax');
          i++;
          break;
        case AFTER_VALUE:
          if (!isWhitespace(b)) this.#afterValue(b, i);
          i++;
          break;
        case LITERAL:
          if (b !== this.#literal[this.#literalAt]) throw new JsonScanError('syntax');
          if (++this.#literalAt === this.#literal.length) this.#valueEnded(i + 1);
          i++;
          break;
        default:
          // Numbers: a byte that cannot continue one ends it and is scanned again.
          if (this.#number(b)) i++;
          else this.#valueEnded(i);
      }
    }
    this.#route(n, this.#sink);
    this.#chunk = NO_BYTES; // nothing of a chunk is held past its write
    this.#runStart = 0;
  }

  /** Advances a number by `b`; false when `b` ends it (an error unless the number is complete). */
  #number(b: number): boolean {
    const digit = b >= 0x30 && b <= 0x39;
    switch (this.#state) {
      case NUM_MINUS:
        if (!digit) throw new JsonScanError('syntax');
        this.#state = b === 0x30 ? NUM_ZERO : NUM_INT;
        return true;
      case NUM_ZERO:
      case NUM_INT:
        if (digit && this.#state === NUM_INT) return true;
        if (digit) throw new JsonScanError('syntax'); // a leading zero
        if (b === 0x2e) this.#state = NUM_DOT;
        else if (b === 0x65 || b === 0x45) this.#state = NUM_E;
        else return false;
        return true;
      case NUM_DOT:
        if (!digit) throw new JsonScanError('syntax');
        this.#state = NUM_FRAC;
        return true;
      case NUM_FRAC:
        if (digit) return true;
        if (b === 0x65 || b === 0x45) this.#state = NUM_E;
        else return false;
        return true;
      case NUM_E:
        if (b === 0x2b || b === 0x2d) this.#state = NUM_E_SIGN;
        else if (digit) this.#state = NUM_EXP;
        else throw new JsonScanError('syntax');
        return true;
      case NUM_E_SIGN:
        if (!digit) throw new JsonScanError('syntax');
        this.#state = NUM_EXP;
        return true;
      default: // NUM_EXP
        return digit;
    }
  }

  #startValue(b: number, i: number): void {
    this.#valueStarting(b, i);
    if (b === 0x7b) {
      this.#open(OBJECT);
      this.#state = KEY_OR_CLOSE;
    } else if (b === 0x5b) {
      this.#open(ARRAY);
      this.#state = VALUE_OR_CLOSE;
    } else if (b === 0x22) {
      this.#stringIsKey = false;
      this.#state = STRING;
    } else if (b === 0x2d) {
      this.#state = NUM_MINUS;
    } else if (b === 0x30) {
      this.#state = NUM_ZERO;
    } else if (b >= 0x31 && b <= 0x39) {
      this.#state = NUM_INT;
    } else if (LITERALS[b]) {
      this.#literal = LITERALS[b];
      this.#literalAt = 1;
      this.#state = LITERAL;
    } else {
      throw new JsonScanError('syntax');
    }
  }

  #afterValue(b: number, i: number): void {
    const container = this.#depth === 0 ? 0 : this.#containers[this.#depth]!;
    if (b === 0x2c && container === OBJECT) this.#state = KEY;
    else if (b === 0x2c && container === ARRAY) this.#state = VALUE;
    else if (b === 0x7d && container === OBJECT) this.#close(i);
    else if (b === 0x5d && container === ARRAY) this.#close(i);
    else throw new JsonScanError('syntax'); // trailing garbage at the top level too
  }

  #open(kind: number): void {
    if (this.#depth === this.#maxDepth) throw new JsonScanError('depth');
    this.#containers[++this.#depth] = kind;
  }

  /** Closes the innermost container (its callers have checked the bracket matches it). */
  #close(i: number): void {
    this.#depth--;
    this.#valueEnded(i + 1);
  }

  #startKey(i: number): void {
    this.#stringIsKey = true;
    this.#state = STRING;
    if (this.#topIsObject && this.#depth === 1) this.#route(i, MEMBER);
  }

  /** A key ended before `end`: a top-level one decides where its value goes. */
  #keyEnded(end: number): void {
    if (!this.#topIsObject || this.#depth !== 1) return;
    this.#route(end, DROP);
    const key = JSON.parse(decoder.decode(this.#member.view())) as string;
    this.#memberIsField = key === this.#field;
    if (this.#memberIsField) this.#member.reset();
    else this.#member.append(COLON_BYTES, 0, 1);
  }

  /** A value starts at `i` (the containers it is in not counting itself). */
  #valueStarting(b: number, i: number): void {
    const depth = this.#depth;
    if (depth === 0) {
      this.#topIsObject = b === 0x7b;
      if (!this.#topIsObject) this.#route(i, WHOLE);
    } else if (depth === 1 && this.#topIsObject) {
      if (!this.#memberIsField) {
        this.#route(i, MEMBER);
      } else if (b === 0x5b) {
        this.#inFieldArray = true;
        this.#fieldValue.reset();
        this.#element.reset();
        this.#hasElement = false;
        this.#elementTooLarge = false;
      } else {
        this.#fieldValue.reset();
        this.#route(i, FIELD_VALUE);
      }
    } else if (depth === 2 && this.#inFieldArray) {
      // A new element: the previous one is no longer the last.
      this.#element.reset();
      this.#hasElement = true;
      this.#elementTooLarge = false;
      this.#route(i, ELEMENT);
    }
  }

  /** A value ended before `end` (its own container already closed). */
  #valueEnded(end: number): void {
    this.#state = AFTER_VALUE;
    const depth = this.#depth;
    if (depth === 1 && this.#topIsObject) {
      this.#route(end, DROP);
      if (this.#memberIsField) {
        if (this.#inFieldArray && this.#elementTooLarge) throw new JsonScanError('piece');
        this.#fieldKind = this.#inFieldArray ? 'array' : 'value';
        this.#inFieldArray = false;
        this.#memberIsField = false;
      } else {
        const member = this.#member.take();
        this.#members.push(member);
        this.#membersBytes += member.byteLength;
      }
    } else if (depth === 2 && this.#inFieldArray) {
      this.#route(end, DROP);
    }
  }

  /** Sends the bytes of the current run (up to `at`) to their sink; bytes from `at` go to `sink`. */
  #route(at: number, sink: number): void {
    const start = this.#runStart;
    this.#runStart = at;
    const from = this.#sink;
    this.#sink = sink;
    if (at === start || from === DROP) return;
    const chunk = this.#chunk;
    if (from === ELEMENT) {
      if (this.#elementTooLarge) return;
      this.#element.append(chunk, start, at);
      if (this.#element.length > this.#maxPieceBytes) {
        // Too large to keep: an error only if it turns out to be the last element.
        this.#elementTooLarge = true;
        this.#element.reset();
      }
      return;
    }
    const buffer = from === MEMBER ? this.#member : from === FIELD_VALUE ? this.#fieldValue : this.#whole;
    buffer.append(chunk, start, at);
    const kept =
      from === WHOLE ? buffer.length : this.#membersBytes + this.#member.length + this.#fieldValue.length;
    if (kept > this.#maxPieceBytes) throw new JsonScanError('piece');
  }

  #reassembled(): Uint8Array {
    if (!this.#topIsObject) return this.#whole.view();
    const parts: Uint8Array[] = [];
    for (const member of this.#members) parts.push(member);
    if (this.#fieldKind !== null) {
      const value =
        this.#fieldKind === 'value'
          ? this.#fieldValue.view()
          : concat([OPEN_ARRAY, this.#hasElement ? this.#element.view() : NO_BYTES, CLOSE_ARRAY]);
      parts.push(concat([encoder.encode(`${JSON.stringify(this.#field)}:`), value]));
    }
    const joined: Uint8Array[] = [OPEN_OBJECT];
    parts.forEach((part, index) => {
      if (index > 0) joined.push(COMMA);
      joined.push(part);
    });
    joined.push(CLOSE_OBJECT);
    return concat(joined);
  }
}

const COLON_BYTES = encoder.encode(':');
const COMMA = encoder.encode(',');
const OPEN_OBJECT = encoder.encode('{');
const CLOSE_OBJECT = encoder.encode('}');
const OPEN_ARRAY = encoder.encode('[');
const CLOSE_ARRAY = encoder.encode(']');

function isWhitespace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function isHex(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46);
}

/** `"`, `\`, `/`, `b`, `f`, `n`, `r`, `t` (`u` is handled apart). */
function isEscapable(b: number): boolean {
  return (
    b === 0x22 ||
    b === 0x5c ||
    b === 0x2f ||
    b === 0x62 ||
    b === 0x66 ||
    b === 0x6e ||
    b === 0x72 ||
    b === 0x74
  );
}

function concat(parts: Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

/** A growable byte buffer: kept pieces are copied out of the chunks, so no chunk stays alive. */
class ByteBuffer {
  #bytes = new Uint8Array(256);
  length = 0;

  append(source: Uint8Array, start: number, end: number): void {
    const needed = this.length + (end - start);
    if (needed > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(needed, this.#bytes.length * 2));
      grown.set(this.#bytes.subarray(0, this.length));
      this.#bytes = grown;
    }
    this.#bytes.set(source.subarray(start, end), this.length);
    this.length = needed;
  }

  get capacity(): number {
    return this.#bytes.byteLength;
  }

  view(): Uint8Array {
    return this.#bytes.subarray(0, this.length);
  }

  /** The bytes as their own copy; the buffer starts over. */
  take(): Uint8Array {
    const bytes = this.#bytes.slice(0, this.length);
    this.length = 0;
    return bytes;
  }

  reset(): void {
    this.length = 0;
  }
}
