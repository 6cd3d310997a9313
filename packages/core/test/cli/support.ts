import type { RunningPlatform } from '../support/platform.js';

/** A browser-style session on a platform with the development IdP: the cookie header and who it is. */
export interface SignedIn {
  cookie: string;
  email: string;
}

/** Signs `email` in the way a browser does (dev-IdP token, then `POST /api/auth/session`). */
export async function signIn(running: RunningPlatform, email: string): Promise<SignedIn> {
  const tokenResponse = await fetch(`${running.url}/auth/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
  const session = await fetch(`${running.url}/api/auth/session`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  const setCookie = session.headers.get('set-cookie') ?? '';
  const cookie = setCookie.split(';')[0]!;
  if (!cookie.startsWith('service_session=')) throw new Error(`sign-in failed: ${session.status}`);
  return { cookie, email };
}

/** The CSRF token and hidden fields of the consent form in a bootstrap page. */
export function formFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1]!] = match[2]!
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'");
  }
  return fields;
}

/** The JSON the delivery page posts to the loopback listener. */
export function deliveredLogin(html: string): {
  cb: string;
  code: string;
  payload: { apiKey: string; tenantId: string; appId: string | null; email: string | null; issuedAt: string };
} {
  const match = /<script type="application\/json" id="cli-login">(.*?)<\/script>/s.exec(html);
  if (!match) throw new Error('no login payload in the page');
  return JSON.parse(match[1]!);
}
