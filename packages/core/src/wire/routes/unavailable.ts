/**
 * Routes of the contract whose capability this composition does not provide: organizations
 * (refused before principal resolution: no cloud capability), and the connections surface
 * without a connections source, which answers `not_implemented`.
 */
import { Hono } from 'hono';
import type { WireContext, WireEnv } from '../context.js';
import { WireError } from '../errors.js';

export function unavailableRoutes(ctx: WireContext): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  const orgs = () => {
    throw new WireError(
      'cloud_required',
      'Organizations are not available: this deployment has no cloud capability.',
    );
  };
  if (!ctx.orgs) {
    app.all('/orgs', orgs);
    app.all('/orgs/*', orgs);
  }

  const notImplemented = (what: string) => () => {
    throw new WireError('not_implemented', `${what} are not available in this composition yet.`);
  };
  if (!ctx.connections) {
    // Literal paths ahead of `:id`, so these words are never read as a connection id.
    app.get('/connections/catalog', () => {
      throw new WireError(
        'not_implemented',
        'The connections catalog is not available: this composition has no connections source.',
      );
    });
    app.all('/connections', notImplemented('Connections'));
    app.all('/connections/:id', notImplemented('Connections'));
  }

  return app;
}
