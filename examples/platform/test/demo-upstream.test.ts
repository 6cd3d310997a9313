/**
 * The demo's stand-in model speaks OpenAI's chat completions wire as clients parse it: a stream
 * ends with a chunk giving the finish reason, then the usage (when asked for), then `[DONE]`.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { describe, expect, it } from 'vitest';
import { demoUpstream } from '../src/demo-upstream.js';

const complete = (body: object) =>
  demoUpstream().fetch(
    new Request('http://demo-upstream.invalid/llm/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'demo-echo',
        messages: [{ role: 'user', content: 'hi there' }],
        ...body,
      }),
    }),
  );

describe('the demo upstream', () => {
  it('ends a stream as OpenAI does: the finish reason, then the usage, then [DONE]', async () => {
    const response = await complete({ stream: true, stream_options: { include_usage: true } });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const data: string[] = [];
    const events = response
      .body!.pipeThrough(new TextDecoderStream())
      .pipeThrough(new EventSourceParserStream());
    const reader = events.getReader();
    for (let event = await reader.read(); !event.done; event = await reader.read())
      data.push(event.value.data);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((text) => JSON.parse(text));
    const text = chunks
      .flatMap((chunk) =>
        chunk.choices.map((choice: { delta: { content?: string } }) => choice.delta.content ?? ''),
      )
      .join('');
    expect(text).toBe('You said: hi there');
    const finishes = chunks.flatMap((chunk) =>
      chunk.choices.map((choice: { finish_reason: string | null }) => choice.finish_reason).filter(Boolean),
    );
    expect(finishes).toEqual(['stop']);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number) } });
    expect(chunks.at(-2).choices[0]).toEqual({ index: 0, delta: {}, finish_reason: 'stop' });
  });

  it('answers a completion whole with its finish reason and usage', async () => {
    const answer = await (await complete({})).json();
    expect(answer.choices[0]).toMatchObject({
      message: { content: 'You said: hi there' },
      finish_reason: 'stop',
    });
    expect(answer.usage.total_tokens).toBe(answer.usage.prompt_tokens + answer.usage.completion_tokens);
  });
});
