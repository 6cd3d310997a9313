import { describe, expect, it } from 'vitest';
import { contentSecurityPolicy, escapeHtml, htmlDocument, htmlPageHeaders } from './html.js';

describe('escapeHtml', () => {
  it('escapes what could open an element or close a quoted attribute', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('contentSecurityPolicy', () => {
  it('allows inline styles only, and no form, script, image or framing, by default', () => {
    expect(contentSecurityPolicy()).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
    );
  });

  it('names each source the policy allows, in a fixed directive order', () => {
    expect(
      contentSecurityPolicy({
        formTargets: ["'self'", 'https://client.example'],
        scripts: ["'nonce-abc'"],
        connectTo: ['http://127.0.0.1:4567'],
        images: ["'self'", 'data:'],
      }),
    ).toBe(
      "default-src 'none'; script-src 'nonce-abc'; connect-src http://127.0.0.1:4567; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self' https://client.example; base-uri 'none'; frame-ancestors 'none'",
    );
  });
});

describe('htmlPageHeaders', () => {
  it('answers HTML that is never cached, sniffed or framed', () => {
    expect(htmlPageHeaders({ formTargets: ["'self'"] })).toEqual({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'same-origin',
    });
  });
});

describe('htmlDocument', () => {
  it('escapes the title and places the stylesheet and body as given', () => {
    const html = htmlDocument({ title: 'A <b>', style: 'p{margin:0}', body: '<p>hi</p>' });
    expect(html).toContain('<title>A &lt;b&gt;</title>');
    expect(html).toContain('<style>\np{margin:0}\n</style>');
    expect(html).toContain('<body>\n<p>hi</p>\n</body>');
  });
});
