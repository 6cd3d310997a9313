import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';

/**
 * Offline stand-ins for the demo's providers, so `pnpm start` can show metered calls with no
 * network: an OpenAI-compatible chat completions API that echoes the last user message (usage
 * counted as one token per four characters) and a search API. Never part of a real deployment.
 *
 * The demo providers' upstream is one fixed address, the same for every instance on a store:
 * `DEMO_UPSTREAM_ORIGIN`. No host answers it (`.invalid` never resolves); each instance's
 * provider proxy answers it from its own stand-in, in process (`withDemoUpstream`). So a demo
 * call works on whichever instance it lands, and keeps working when any other instance stops.
 */
export const DEMO_UPSTREAM_ORIGIN = 'http://demo-upstream.invalid';

/** The fetch the provider proxy calls upstreams with: the demo origin in process, the rest as `fetch` does. */
export function withDemoUpstream(fetchUpstream: typeof fetch = fetch): typeof fetch {
  const upstream = demoUpstream();
  return (input, init) => {
    const request = new Request(input, init);
    return new URL(request.url).origin === DEMO_UPSTREAM_ORIGIN
      ? Promise.resolve(upstream.fetch(request))
      : fetchUpstream(request);
  };
}

export function demoUpstream(): Hono {
  const app = new Hono();

  // The listing carries prices (USD per token, as strings), as gateways that resell many vendors do.
  app.get('/llm/v1/models', (c) =>
    c.json({
      object: 'list',
      data: [
        {
          id: 'demo-echo',
          object: 'model',
          owned_by: 'demo',
          name: 'Demo echo',
          context_length: 32768,
          pricing: { prompt: '0.00000015', completion: '0.0000006' },
        },
        {
          id: 'demo-large',
          object: 'model',
          owned_by: 'demo',
          name: 'Demo large',
          context_length: 200000,
          pricing: { prompt: '0.000003', completion: '0.000015' },
        },
      ],
    }),
  );

  app.post('/llm/v1/chat/completions', async (c) => {
    const body = (await c.req.json().catch(() => null)) as {
      model?: string;
      stream?: boolean;
      stream_options?: { include_usage?: boolean };
      messages?: Array<{ role?: string; content?: unknown }>;
    } | null;
    if (!body || !Array.isArray(body.messages)) {
      return c.json({ error: { message: 'messages is required', type: 'invalid_request_error' } }, 400);
    }
    const last = [...body.messages].reverse().find((m) => m.role === 'user');
    const prompt = typeof last?.content === 'string' ? last.content : '';
    const reply = `You said: ${prompt}`;
    const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));
    const usage = {
      prompt_tokens: tokens(JSON.stringify(body.messages)),
      completion_tokens: tokens(reply),
      total_tokens: 0,
    };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const model = body.model ?? 'demo-echo';
    if (!body.stream) {
      return c.json({
        id: 'chatcmpl-demo',
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
        usage,
      });
    }
    return streamSSE(c, async (stream) => {
      for (const word of reply.split(/(?<= )/)) {
        await stream.writeSSE({
          data: JSON.stringify({
            id: 'chatcmpl-demo',
            object: 'chat.completion.chunk',
            model,
            choices: [{ index: 0, delta: { content: word }, finish_reason: null }],
          }),
        });
        await stream.sleep(20);
      }
      // As OpenAI's streams end: a chunk with an empty delta and the finish reason (clients such
      // as the AI SDK's OpenAI-compatible provider fail a stream that never gives one).
      await stream.writeSSE({
        data: JSON.stringify({
          id: 'chatcmpl-demo',
          object: 'chat.completion.chunk',
          model,
          choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        }),
      });
      if (body.stream_options?.include_usage) {
        await stream.writeSSE({
          data: JSON.stringify({ id: 'chatcmpl-demo', object: 'chat.completion.chunk', choices: [], usage }),
        });
      }
      await stream.writeSSE({ data: '[DONE]' });
    });
  });

  // Speech synthesis: a short silent WAV for any text.
  app.post('/speech/v1/audio/speech', () => {
    const wav = Buffer.alloc(44);
    wav.write('RIFF', 0);
    wav.writeUInt32LE(36, 4);
    wav.write('WAVEfmt ', 8);
    wav.writeUInt32LE(16, 16);
    wav.writeUInt16LE(1, 20);
    wav.writeUInt16LE(1, 22);
    wav.writeUInt32LE(8000, 24);
    wav.writeUInt32LE(8000, 28);
    wav.writeUInt16LE(1, 32);
    wav.writeUInt16LE(8, 34);
    wav.write('data', 36);
    return new Response(wav, { headers: { 'content-type': 'audio/wav' } });
  });

  app.post('/transcription/v1/audio/transcriptions', (c) => c.json({ text: 'Hello from the demo.' }));

  app.get('/search', (c) => {
    const q = c.req.query('q') ?? '';
    return c.json({
      query: q,
      results: [{ title: `Results for ${q || 'nothing'}`, url: 'https://example.com/' }],
    });
  });

  return app;
}
