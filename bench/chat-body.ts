/**
 * `pnpm bench chat-body`: reading a useChat body (the whole history re-sent, `{ id, messages,
 * trigger, messageId }`) of 2 MB and of 20 MB, arriving in 64 KiB chunks, three ways:
 *
 * - floor: `Buffer.concat` of the chunks, nothing else;
 * - naive: concatenated, decoded and `JSON.parse`d whole (what a plain JSON body reader does);
 * - reader: the streaming reader `POST /chat` uses (`readJsonKeepingLast`), which checks the
 *   whole text is JSON but keeps only the last message and the other fields.
 *
 * Prints the median time of each and the ratios, the most memory each retains while reading
 * (sampled every 1 MiB after a full collection), and the most the reader's scanner holds.
 * Target: the reader within 3x of the naive parse in time.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
// An internal unit, measured as it is.
import { KeepLastScanner, readJsonKeepingLast } from '../packages/core/src/http/json-keep-last.js';
import type { BenchOutcome } from './support/measure.js';

const TIME_TARGET = 3;
const CHUNK = 64 * 1024;
const MiB = 1024 * 1024;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

type Way = 'floor' | 'naive' | 'reader';

/**
 * A useChat body of about `bytes`: turns of about 10 KB, the last one the user's. An assistant
 * turn carries a tool call with a structured output (token-dense JSON) besides its text.
 */
function useChatBody(bytes: number): Uint8Array {
  const text = (i: number, repeat: number) => ({
    type: 'text',
    text: `Turn ${i}: ${'lorem ipsum dolor sit amet, "quoted" \\ text. '.repeat(repeat)}`,
  });
  const toolCall = (i: number) => ({
    type: 'tool-list_orders',
    toolCallId: `call_${i}`,
    state: 'output-available',
    input: { status: 'open', limit: 40 },
    output: Array.from({ length: 40 }, (_, k) => ({ id: k, total: k * 12.5, paid: k % 2 === 0, note: null })),
  });
  const turn = (i: number) =>
    i % 2 === 0
      ? { id: `msg_${i}`, role: 'user', parts: [text(i, 220)] }
      : { id: `msg_${i}`, role: 'assistant', parts: [{ type: 'step-start' }, toolCall(i), text(i, 170)] };
  const count = Math.max(1, Math.round((2 * bytes) / JSON.stringify([turn(0), turn(1)]).length));
  const messages = Array.from({ length: count }, (_, i) => turn(i));
  messages.push({ id: 'msg_last', role: 'user', parts: [{ type: 'text', text: 'And now?' }] });
  // A plain Uint8Array: its slice copies (a Buffer's would be a view).
  return new TextEncoder().encode(
    JSON.stringify({ id: 'chat_1', messages, trigger: 'submit-message', messageId: null }),
  );
}

/** The body as a request streaming it in chunks; `onChunk` runs (and is awaited) as each one is pulled. */
function requestOf(body: Uint8Array, onChunk: () => unknown = () => {}): Request {
  let at = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await onChunk();
      if (at >= body.byteLength) return controller.close();
      // A fresh copy per chunk, as a socket hands them over.
      controller.enqueue(body.slice(at, at + CHUNK));
      at += CHUNK;
    },
  });
  return new Request('http://bench/', { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
}

async function read(way: Way, request: Request): Promise<unknown> {
  if (way === 'reader') {
    return readJsonKeepingLast(request, 'messages', { maxPieceBytes: MiB, maxTotalBytes: 64 * MiB });
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  return way === 'floor' ? bytes : JSON.parse(new TextDecoder().decode(bytes));
}

/** A full collection, and time for V8 to sweep the array buffers it freed (it does so concurrently). */
async function collect(): Promise<void> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 5));
  gc();
}

const heapNow = () => {
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
};

/**
 * Most memory retained above the baseline while `way` reads the body, its result still alive:
 * sampled after a full collection, so garbage not yet collected does not count.
 */
async function peakRetained(way: Way, body: Uint8Array): Promise<number> {
  await collect();
  const base = heapNow();
  let peak = 0;
  let chunks = 0;
  const sample = async () => {
    await collect();
    peak = Math.max(peak, heapNow() - base);
  };
  // Every 16th chunk (1 MiB): a full collection per chunk would take minutes.
  const result = await read(
    way,
    requestOf(body, () => (chunks++ % 16 === 0 ? sample() : undefined)),
  );
  await sample();
  if (result === undefined) throw new Error('no result');
  return peak;
}

/** The most the scanner itself holds while the body goes through it. */
function scannerHeld(body: Uint8Array): number {
  const scanner = new KeepLastScanner('messages', { maxPieceBytes: MiB });
  let most = 0;
  for (let at = 0; at < body.byteLength; at += CHUNK) {
    scanner.write(body.subarray(at, at + CHUNK));
    most = Math.max(most, scanner.heldBytes);
  }
  scanner.end();
  return most;
}

async function medianMs(way: Way, body: Uint8Array, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await read(way, requestOf(body));
    times.push(performance.now() - started);
  }
  return times;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mb = (bytes: number) => `${(bytes / MiB).toFixed(2)} MiB`;

export async function chatBodyBenchmark(): Promise<BenchOutcome> {
  const ways: Way[] = ['floor', 'naive', 'reader'];
  let worst = 0;
  console.log('\nchat body: a useChat body in 64 KiB chunks; median of alternating runs');
  for (const [label, bytes, runs] of [
    ['2 MB', 2_000_000, 40],
    ['20 MB', 20_000_000, 10],
  ] as const) {
    const body = useChatBody(bytes);
    // Warm up each way, then take turns so a noisy moment hits all alike.
    for (const way of ways) await medianMs(way, body, 2);
    const times: Record<Way, number[]> = { floor: [], naive: [], reader: [] };
    for (let round = 0; round < runs; round++) {
      for (const way of ways) times[way].push(...(await medianMs(way, body, 1)));
    }
    const ms = Object.fromEntries(ways.map((way) => [way, median(times[way])])) as Record<Way, number>;
    const held = {} as Record<Way, number>;
    for (const way of ways) held[way] = await peakRetained(way, body);
    const ratio = ms.reader / ms.naive;
    worst = Math.max(worst, ratio);
    console.log(`  ${label} body (${mb(body.byteLength)}):`);
    for (const way of ways) {
      console.log(
        `    ${way.padEnd(7)} ${ms[way].toFixed(1).padStart(8)} ms   retained at most ${mb(held[way])}`,
      );
    }
    console.log(
      `    reader/naive ${ratio.toFixed(2)}x   reader/floor ${(ms.reader / ms.floor).toFixed(2)}x   naive/floor ${(ms.naive / ms.floor).toFixed(2)}x`,
    );
    console.log(
      `    the scanner held at most ${mb(scannerHeld(body))} (its buffers, for one ~10 KB message)`,
    );
  }
  const metTarget = worst <= TIME_TARGET;
  console.log(
    `  worst reader/naive ${worst.toFixed(2)}x (target <= ${TIME_TARGET}x): ${metTarget ? 'met' : 'MISSED'}`,
  );
  return { ratio: worst, target: TIME_TARGET, metTarget };
}
