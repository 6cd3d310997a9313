/**
 * Live figures: a page that shows one (`data-live="balance"`, or connection rows carrying
 * `data-connection-id`) follows the platform's `/dashboard/live` event stream and updates them in
 * place. EventSource reconnects by itself when the stream ends or the server restarts.
 */
interface LiveBalance {
  micros: number;
  formatted: string;
}

interface LiveConnection {
  id: string;
  provider: string;
  status: string;
}

export function followLive(root: Document): EventSource | null {
  const balances = root.querySelectorAll<HTMLElement>('[data-live="balance"]');
  const connections = root.querySelectorAll<HTMLElement>('[data-connection-id]');
  if (balances.length === 0 && connections.length === 0) return null;
  const base = root.body.dataset.base ?? '';
  const source = new EventSource(`${base}/dashboard/live`);
  source.addEventListener('balance', (event) => {
    const balance = JSON.parse((event as MessageEvent<string>).data) as LiveBalance;
    for (const element of balances) {
      element.textContent = balance.formatted;
      element.dataset.micros = String(balance.micros);
    }
  });
  source.addEventListener('connections', (event) => {
    const rows = JSON.parse((event as MessageEvent<string>).data) as LiveConnection[];
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const element of connections) {
      const row = byId.get(element.dataset.connectionId ?? '');
      const status = element.querySelector<HTMLElement>('[data-live="connection-status"]');
      if (!status) continue;
      const next = row?.status ?? 'revoked';
      if (status.dataset.status === next) continue;
      status.dataset.status = next;
      status.textContent = next.replace(/_/g, ' ');
    }
  });
  window.addEventListener('pagehide', () => source.close(), { once: true });
  return source;
}
