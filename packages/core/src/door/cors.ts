/**
 * CORS for the door's machine endpoints (discovery, register, token, revoke, the MCP transport):
 * browser-based MCP clients (the MCP Inspector, web agents) call them cross-origin. They take
 * bearer tokens or public-client forms, never cookies, so `*` hands a page nothing it could not
 * fetch itself. The consent, connect and federate pages get no CORS at all.
 */
export const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Mcp-Session-Id, WWW-Authenticate, Mcp-Protocol-Version, Retry-After',
} as const;

export function withCors(response: Response): Response {
  try {
    for (const [name, value] of Object.entries(CORS_HEADERS)) response.headers.set(name, value);
    return response;
  } catch {
    // Immutable headers (a response piped from elsewhere): copy once.
    const headers = new Headers(response.headers);
    for (const [name, value] of Object.entries(CORS_HEADERS)) headers.set(name, value);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}

export function preflight(methods: string): Response {
  return new Response(null, {
    status: 204,
    headers: {
      ...CORS_HEADERS,
      'access-control-allow-methods': methods,
      'access-control-allow-headers':
        'Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Accept',
      'access-control-max-age': '600',
    },
  });
}
