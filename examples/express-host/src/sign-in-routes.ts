/**
 * The sign-in stand-in's routes. Scripts: `POST /login` with JSON `{ "email" }` answers the token
 * (and sets the cookie). Browsers: `GET /login?return_to=<url>` shows the form, whose post sets
 * the `host_session` cookie and answers 303 back to `return_to` (on this host only). This is
 * where the MCP door sends a user who is not signed in on the way to its consent page.
 */
import express, { type Router } from 'express';
import { SESSION_COOKIE, type SignIn } from './sign-in.js';
import { PAGE_HEADERS, returnTarget, signInPage } from './sign-in-page.js';

export interface SignInRoutesOptions {
  /** Origin of the host's public URL: where `return_to` may point and form posts come from. */
  origin: string;
  productName: string;
}

export function signInRoutes(signIn: SignIn, options: SignInRoutesOptions): Router {
  const router = express.Router();
  const page = (res: express.Response, status: number, returnTo: string, error?: string) => {
    res
      .status(status)
      .set(PAGE_HEADERS)
      .send(signInPage({ productName: options.productName, returnTo, ...(error ? { error } : {}) }));
  };

  router.get('/login', (req, res) => {
    page(res, 200, returnTarget(req.query.return_to, options.origin));
  });

  router.post('/login', express.urlencoded({ extended: false, limit: '4kb' }), (req, res) => {
    const email = typeof req.body?.email === 'string' ? req.body.email : null;
    const issued = email === null ? null : signIn.tokenFor(email);
    if (!req.is('application/x-www-form-urlencoded')) {
      if (!issued) {
        res.status(400).json({ message: 'email must be an email address' });
        return;
      }
      res.cookie(SESSION_COOKIE, issued.token, { httpOnly: true, sameSite: 'lax', path: '/' });
      res.json(issued);
      return;
    }
    // A form post from another site would sign the browser in as someone else (login CSRF).
    const origin = req.get('origin');
    if (origin !== undefined && origin !== options.origin) {
      res.status(403).json({ message: 'Sign-in forms are accepted from this host only.' });
      return;
    }
    const returnTo = returnTarget(req.body?.return_to, options.origin);
    if (!issued) {
      page(res, 400, returnTo, 'Enter an email address.');
      return;
    }
    res.cookie(SESSION_COOKIE, issued.token, { httpOnly: true, sameSite: 'lax', path: '/' });
    res.redirect(303, returnTo);
  });

  router.post('/logout', (_req, res) => {
    res.clearCookie(SESSION_COOKIE, { path: '/' });
    res.json({ signedOut: true });
  });

  return router;
}
