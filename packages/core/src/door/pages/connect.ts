/**
 * `GET /api/service/mcp/connect`: how to add this server to an MCP client. Unauthenticated,
 * themed, no JavaScript, and built only from what the server card advertises.
 */

import { escapeHtml } from '../../http/html.js';
import type { DoorConfig } from '../config.js';
import type { ServerCard } from '../discovery.js';
import { layout, pageHeaders } from './html.js';

/** Only what the server card advertises reaches the page. */
export function connectPage(config: DoorConfig, card: ServerCard): Response {
  const name = card.serverInfo.name;
  const url = card.transport.endpoint;
  const slug =
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'mcp-server';
  const e = escapeHtml;
  const cursor = JSON.stringify({ mcpServers: { [slug]: { url } } }, null, 2);
  const vscode = JSON.stringify({ servers: { [slug]: { type: 'http', url } } }, null, 2);
  const body = `<h1>Connect ${e(name)} to your AI assistant</h1>
<p>${e(name)} is an MCP server. Add this URL to any MCP client; it signs you in with your ${e(name)} account the first time.</p>
<pre id="mcp-url">${e(url)}</pre>
<h2>Claude</h2>
<ol><li>Open <strong>Settings → Connectors</strong> and choose <strong>Add custom connector</strong>.</li>
<li>Name it <strong>${e(name)}</strong>, paste the URL above, and choose <strong>Add</strong>.</li>
<li>Choose <strong>Connect</strong> and approve access when ${e(name)} asks.</li></ol>
<h2>ChatGPT</h2>
<ol><li>Open <strong>Settings → Apps &amp; Connectors</strong> (developer mode on) and choose <strong>Create</strong>.</li>
<li>Paste the URL above as the MCP server URL, with <strong>OAuth</strong> authentication.</li>
<li>Sign in and approve access when ${e(name)} asks.</li></ol>
<h2>Claude Code</h2>
<pre>claude mcp add --transport http ${e(slug)} ${e(url)}</pre>
<h2>Cursor</h2>
<p>Add to <code>~/.cursor/mcp.json</code>, then sign in from Cursor's MCP settings:</p>
<pre>${e(cursor)}</pre>
<h2>VS Code</h2>
<p>Add to <code>.vscode/mcp.json</code>, then choose <strong>Start</strong> and sign in:</p>
<pre>${e(vscode)}</pre>
<h2>Any other MCP client</h2>
<p>Transport: Streamable HTTP. Authentication: OAuth 2.1, the client known by its metadata document (an HTTPS client id) or by dynamic client registration; clients discover it from the server's first 401 answer.</p>`;
  return new Response(
    layout({ title: `Connect ${name}`, productName: config.productName, theme: config.theme, body }),
    { status: 200, headers: pageHeaders(null) },
  );
}
