import { describe, expect, it } from 'vitest';
import { createUsageObserver } from './usage.js';

const bytes = (text: string) => new TextEncoder().encode(text);

function observe(dialect: 'openai' | 'anthropic' | 'per_call', stream: boolean, parts: string[]) {
  const observer = createUsageObserver(dialect, stream);
  for (const part of parts) observer.observe(bytes(part));
  return observer.finish();
}

describe('usage from upstream responses', () => {
  it('reads chat-completion usage from a JSON body split across chunks', () => {
    const body = JSON.stringify({
      id: 'x',
      usage: { prompt_tokens: 12, completion_tokens: 34, total_tokens: 46 },
    });
    expect(observe('openai', false, [body.slice(0, 10), body.slice(10)])).toEqual({
      input_tokens: 12,
      output_tokens: 34,
    });
  });

  it('reads the usage at the end of a JSON body too large to parse whole, not text the answer echoes', () => {
    const echoed = `,"usage":{"prompt_tokens":1,"completion_tokens":1}} "x`;
    const content = `${echoed}${'a'.repeat(9 * 1024 * 1024)}${echoed}`;
    const body = JSON.stringify({
      id: 'x',
      choices: [{ message: { role: 'assistant', content } }],
      usage: { prompt_tokens: 2_250_000, completion_tokens: 2_250_001, details: { note: '}' } },
    });
    const parts = [];
    for (let at = 0; at < body.length; at += 65_536) parts.push(body.slice(at, at + 65_536));
    expect(observe('openai', false, parts)).toEqual({ input_tokens: 2_250_000, output_tokens: 2_250_001 });
    // Without a usage member at its end, a large body reports none (and is billed its estimate).
    const bare = JSON.stringify({ id: 'x', data: 'b'.repeat(9 * 1024 * 1024) });
    expect(observe('openai', false, [bare])).toBeNull();
    // A usage nested in the last of many results is not the call's; nor is one in an answer whose
    // type is not JSON (a file's contents).
    const results = JSON.stringify({
      data: [
        { pad: 'c'.repeat(9 * 1024 * 1024) },
        { response: { usage: { prompt_tokens: 1, completion_tokens: 1 } } },
      ],
    });
    expect(observe('openai', false, [results])).toBeNull();
    const observer = createUsageObserver('openai', false, false);
    observer.observe(bytes(body));
    expect(observer.finish()).toBeNull();
  });

  it('reads the final usage of a streamed chat completion, even split mid-event', () => {
    const events =
      'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n' +
      'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\n' +
      'data: [DONE]\n\n';
    expect(observe('openai', true, [events.slice(0, 50), events.slice(50, 90), events.slice(90)])).toEqual({
      input_tokens: 5,
      output_tokens: 7,
    });
  });

  it('reads only the events that name tokens, and is not misled by content that does', () => {
    const events =
      'data: {"choices":[{"delta":{"content":"max_tokens is a bound"}}]}\n\n' +
      'data: {"choices":[{"delta":{"content":"{\\"usage\\": 1}"}}]}\n\n' +
      'data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}}\n\n';
    expect(observe('openai', true, [events])).toEqual({ input_tokens: 2, output_tokens: 3 });
    expect(observe('openai', true, [events.split('\n\n').slice(0, 2).join('\n\n')])).toBeNull();
  });

  it('reads responses-API usage inside response.completed', () => {
    const events =
      'event: response.completed\ndata: {"response":{"usage":{"input_tokens":3,"output_tokens":4}}}\n\n';
    expect(observe('openai', true, [events])).toEqual({ input_tokens: 3, output_tokens: 4 });
  });

  it('adds anthropic cache tokens to input and takes the last streamed output total', () => {
    const json = JSON.stringify({
      usage: {
        input_tokens: 10,
        cache_creation_input_tokens: 5,
        cache_read_input_tokens: 2,
        output_tokens: 9,
      },
    });
    expect(observe('anthropic', false, [json])).toEqual({ input_tokens: 17, output_tokens: 9 });
    const events =
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":20,"output_tokens":1}}}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":15}}\n\n' +
      'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":30}}\n\n';
    expect(observe('anthropic', true, [events])).toEqual({ input_tokens: 20, output_tokens: 30 });
  });

  it('reports nothing when the upstream reports no usage or sends garbage', () => {
    expect(observe('openai', false, ['{"id":"x"}'])).toBeNull();
    expect(observe('openai', false, ['not json'])).toBeNull();
    expect(observe('openai', true, ['data: {oops\n\n'])).toBeNull();
    expect(observe('openai', false, ['{"usage":{"prompt_tokens":-1,"completion_tokens":"7"}}'])).toBeNull();
  });

  it('counts one call for per-call providers', () => {
    expect(observe('per_call', false, ['anything'])).toEqual({});
  });
});
