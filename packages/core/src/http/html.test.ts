import { describe, expect, it } from 'vitest';
import {
  contentSecurityPolicy,
  escapeHtml,
  html,
  htmlDocument,
  htmlPageHeaders,
  trustedHtml,
} from './html.js';

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
    const doc = htmlDocument({ title: 'A <b>', style: 'p{margin:0}', body: '<p>hi</p>' });
    expect(doc).toContain('<title>A &lt;b&gt;</title>');
    expect(doc).toContain('<style>\np{margin:0}\n</style>');
    expect(doc).toContain('<body>\n<p>hi</p>\n</body>');
  });
});

describe('the html template tag', () => {
  it('escapes every interpolated value, keeps nested fragments, joins lists and drops nothing-values', () => {
    const name = '<img src=x onerror=alert(1)> "quoted" & \'single\'';
    const inner = html`<b>${name}</b>`;
    const page = html`<p title="${name}">${inner}${[html`<i>1</i>`, '<2>']}${null}${undefined}${false}${0}</p>`;
    expect(page.value).toBe(
      '<p title="&lt;img src=x onerror=alert(1)&gt; &quot;quoted&quot; &amp; &#39;single&#39;"><b>&lt;img src=x onerror=alert(1)&gt; &quot;quoted&quot; &amp; &#39;single&#39;</b><i>1</i>&lt;2&gt;0</p>',
    );
  });

  it('writes markup as is only when vouched for', () => {
    expect(html`${trustedHtml('<hr>')}${'<hr>'}`.value).toBe('<hr>&lt;hr&gt;');
  });
});
