// The sign-in stand-in: POST { email } sets the session cookie the wire's principal() reads.
import { SESSION_COOKIE, tokenFor } from '../../../lib/service';

export async function POST(request: Request): Promise<Response> {
  const body = (await request.json().catch(() => null)) as { email?: unknown } | null;
  if (typeof body?.email !== 'string' || !/^[^\s@]{1,64}@[^\s@]{1,190}$/.test(body.email)) {
    return Response.json({ message: 'email must be an email address' }, { status: 400 });
  }
  const token = tokenFor(body.email);
  return Response.json(
    { signedIn: true },
    { headers: { 'set-cookie': `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax` } },
  );
}
