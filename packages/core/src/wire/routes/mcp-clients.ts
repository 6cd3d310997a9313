/**
 * The MCP clients the signed-in user approved at the door (Claude, Cursor, …), and disconnecting
 * one: its consent is withdrawn, its tokens for the user revoked and its sessions ended, so its
 * next MCP request is a 401 and it must ask the user again. Mounted with the door.
 *
 * @see docs/door.md "Connected clients"
 */
import { Hono } from 'hono';
import type { WireContext, WireEnv } from '../context.js';
import type { ServiceDoor } from '../door-loader.js';
import { WireError } from '../errors.js';
import { noFields, principalOf, refuseOrg } from '../request.js';

export function mcpClientRoutes(ctx: WireContext, door: ServiceDoor): Hono<WireEnv> {
  const app = new Hono<WireEnv>();

  app.get('/mcp-clients', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    const consents = await door.consentsOf(principal.subject);
    return c.json({
      clients: consents.map((consent) => ({
        id: consent.clientId,
        name: consent.clientName,
        scopes: consent.scopes,
        approvedAt: consent.approvedAt.toISOString(),
      })),
    });
  });

  app.delete('/mcp-clients/:id', async (c) => {
    refuseOrg(c);
    const principal = await principalOf(ctx, c);
    await noFields(c);
    const id = c.req.param('id');
    // Only a client the user approved: an id they never connected is unknown, and nothing of it
    // (a backend's service-key tokens, say) is revoked.
    const approved = await door.consentsOf(principal.subject);
    if (!approved.some((consent) => consent.clientId === id)) {
      throw new WireError('not_found', 'No such MCP client.');
    }
    // Two disconnects racing both find the consent; only the one that withdrew it answers 200.
    if (!(await door.withdrawConsent(principal.subject, id))) {
      throw new WireError('not_found', 'No such MCP client.');
    }
    ctx.audit.record(principal.subject, 'mcp_client.disconnected', { clientId: id });
    return c.json({ disconnected: true, id });
  });

  return app;
}
