/**
 * Next.js decodes the segments of a catch-all route before it calls the route handler, and
 * answers a path it cannot decode (`/api/service/threads/%E0%A4%A`) with its own 500 page: the
 * handler, and so the wire, never sees the request. This proxy (Next.js 16's name for middleware)
 * runs first and answers such a path 400 `malformed_url`, as the wire does under Express.
 */
export function proxy(request: Request): Response | undefined {
  try {
    decodeURIComponent(new URL(request.url).pathname);
    return undefined;
  } catch {
    return Response.json(
      { error: { code: 'malformed_url', message: 'The URL has a malformed percent-encoding.' } },
      { status: 400 },
    );
  }
}

export const config = { matcher: ['/api/service/:path*', '/.well-known/:path*'] };
