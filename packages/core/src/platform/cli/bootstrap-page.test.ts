import { describe, expect, it } from 'vitest';
import { consentPage, deliveryPage } from './bootstrap-page.js';
import { parseLoopbackCallback } from './loopback-callback.js';

const callback = parseLoopbackCallback('http://127.0.0.1:4567/done')!;
const hostile = '"</script><script>alert(1)</script><!--\u2028&amp;'; // also a stray U+2028

describe('deliveryPage', () => {
  it('keeps hostile values inside the JSON block, where they read back unchanged', () => {
    const payload = { apiKey: 'service_sk_x', tenantId: 't', appId: null, email: hostile, issuedAt: 'now' };
    const html = deliveryPage(payload, callback, 'n0nce');
    expect(html).not.toContain('<script>alert');
    expect(html.match(/<\/script>/g)).toHaveLength(2); // the JSON block's and the nonce script's own
    const block = /<script type="application\/json" id="cli-login">([^<]*)<\/script>/.exec(html)?.[1];
    expect(JSON.parse(block!)).toEqual({
      cb: callback.url,
      payload,
      code: Buffer.from(JSON.stringify(payload)).toString('base64url'),
    });
  });
});

describe('consentPage', () => {
  it('escapes every value it shows', () => {
    const html = consentPage({
      email: hostile,
      workspace: hostile,
      callback,
      mode: 'personal-key',
      csrfToken: '"x',
    });
    expect(html).not.toContain('<script');
    expect(html).toContain('&quot;&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--');
    expect(html).toContain('value="&quot;x"');
  });
});
