/**
 * Scripted stand-ins for a model provider, built on the AI SDK's own mock language model: each
 * model step streams the text and tool calls the test scripts, so no test reaches a network model.
 */
import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

export interface ScriptedStep {
  text?: string[];
  /** `streamInput`: the input is first streamed in pieces of that many characters, as providers do. */
  toolCalls?: Array<{ id: string; name: string; input: unknown; streamInput?: number }>;
  /** Fails the model call with this error. */
  error?: Error;
  /** Waits before streaming this step. */
  delayMs?: number;
  /** Delay between stream parts. */
  chunkDelayMs?: number;
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

export function streamPartsOf(step: ScriptedStep): LanguageModelV3StreamPart[] {
  const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  if (step.text?.length) {
    parts.push({ type: 'text-start', id: 't1' });
    for (const delta of step.text) parts.push({ type: 'text-delta', id: 't1', delta });
    parts.push({ type: 'text-end', id: 't1' });
  }
  for (const call of step.toolCalls ?? []) {
    if (call.streamInput) {
      const text = JSON.stringify(call.input);
      parts.push({ type: 'tool-input-start', id: call.id, toolName: call.name });
      for (let at = 0; at < text.length; at += call.streamInput) {
        parts.push({ type: 'tool-input-delta', id: call.id, delta: text.slice(at, at + call.streamInput) });
      }
      parts.push({ type: 'tool-input-end', id: call.id });
    }
    parts.push({
      type: 'tool-call',
      toolCallId: call.id,
      toolName: call.name,
      input: JSON.stringify(call.input),
    });
  }
  parts.push({
    type: 'finish',
    finishReason: { unified: step.toolCalls?.length ? 'tool-calls' : 'stop', raw: undefined },
    usage,
  });
  return parts;
}

/** A model that plays `steps` in order, one per model call (the last one repeats). */
export function scriptedModel(steps: ScriptedStep[]) {
  let call = 0;
  const calls: LanguageModelV3CallOptions[] = [];
  const model = new MockLanguageModelV3({
    doStream: async (options) => {
      calls.push(options);
      const step = steps[Math.min(call++, steps.length - 1)]!;
      if (step.delayMs) await new Promise((resolve) => setTimeout(resolve, step.delayMs));
      if (step.error) throw step.error;
      return {
        stream: simulateReadableStream({
          chunks: streamPartsOf(step),
          initialDelayInMs: null,
          chunkDelayInMs: step.chunkDelayMs ?? null,
        }),
      };
    },
  });
  return { model, calls };
}

/** A model whose every step is chosen from the prompt it is given (for long, shared scripts). */
export function reactiveModel(decide: (options: LanguageModelV3CallOptions) => ScriptedStep) {
  return new MockLanguageModelV3({
    doStream: async (options) => {
      const step = decide(options);
      return {
        stream: simulateReadableStream({
          chunks: streamPartsOf(step),
          initialDelayInMs: null,
          chunkDelayInMs: step.chunkDelayMs ?? null,
        }),
      };
    },
  });
}

/** The text of the last user message of a prompt. */
export function lastUserText(options: LanguageModelV3CallOptions): string {
  const user = [...options.prompt].reverse().find((m) => m.role === 'user');
  return JSON.stringify(user?.content ?? '');
}

/**
 * A model whose every step streams text deltas forever, one every `everyMs`, until its call is
 * aborted, as a provider's fetch is: the stream then fails with the abort's reason.
 */
export function endlessModel(everyMs = 20) {
  return new MockLanguageModelV3({
    doStream: async ({ abortSignal }) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const stream = new ReadableStream<LanguageModelV3StreamPart>({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          controller.enqueue({ type: 'text-start', id: 't1' });
          let n = 0;
          const tick = () => {
            controller.enqueue({ type: 'text-delta', id: 't1', delta: `w${n++} ` });
            timer = setTimeout(tick, everyMs);
          };
          timer = setTimeout(tick, everyMs);
          abortSignal?.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              controller.error(abortSignal.reason);
            },
            { once: true },
          );
        },
        cancel() {
          clearTimeout(timer);
        },
      });
      return { stream };
    },
  });
}
