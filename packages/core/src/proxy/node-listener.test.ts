import { describe, expect, it } from 'vitest';
import { isPlainProxyUrl } from './node-listener.js';
import { subPathOf } from './request.js';

describe('which proxy URLs the Node listener answers itself', () => {
  it('takes plain proxy URLs, with or without a query', () => {
    expect(isPlainProxyUrl('/proxy/llm/v1/chat/completions')).toBe(true);
    expect(isPlainProxyUrl('/proxy/llm')).toBe(true);
    expect(isPlainProxyUrl('/proxy/llm/')).toBe(true);
    expect(isPlainProxyUrl('/proxy/azure-openai/openai/deployments/x/chat?api-version=2024-06-01')).toBe(
      true,
    );
    expect(isPlainProxyUrl('/proxy/llm/v1/files/file-abc.jsonl')).toBe(true);
  });

  it('leaves the rest to the app: other paths, dot segments, percent-encodings, odd characters', () => {
    for (const url of [
      '/healthz',
      '/proxy',
      '/proxy/',
      '/proxyx/llm/v1',
      '/proxy/llm/../admin',
      '/proxy/llm/./v1',
      '/proxy/llm/v1/..',
      '/proxy/llm/v1/..?x=1',
      '/proxy/ll%00m/v1',
      '/proxy/llm/v1/a%20b',
      '/proxy/llm/v1?q=%00',
      "/proxy/llm/v1?q='",
      '/proxy/llm/v1\\..\\admin',
      '/proxy/llm/v1/"x"',
      '/proxy/llm/v1#frag',
    ]) {
      expect(isPlainProxyUrl(url), url).toBe(false);
    }
  });

  it('reads the path after the provider as the Request way does', () => {
    expect(subPathOf('/proxy/llm/v1/chat/completions')).toBe('/v1/chat/completions');
    expect(subPathOf('/proxy/llm')).toBe('/');
    expect(subPathOf('/proxy/llm/')).toBe('/');
  });
});
