// Focused harness: upstream + metered (optionally raw) servers, autocannon 10 connections, N rounds.
import { spawn, type ChildProcess } from 'node:child_process';
import { load, sequentialLatency } from './bench/support/measure.js';
const SERVERS = new URL('./bench/support/proxy-servers.ts', import.meta.url).pathname;
const children: ChildProcess[] = [];
function server(role: string, upstream = '', options: object = {}, nodeArgs: string[] = []): Promise<{ url: string; key?: string }> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', SERVERS, role, upstream, JSON.stringify(options)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  return new Promise((resolve) => child.once('message', (m: any) => resolve(m)));
}
const nodeArgs = (process.env.METERED_NODE_ARGS ?? '').split(' ').filter(Boolean);
try {
  const up = await server('upstream');
  const m = await server('metered', up.url, JSON.parse(process.env.METERED_OPTIONS ?? '{}'), nodeArgs);
  const raw = await server('raw', up.url, {}, (process.env.RAW_NODE_ARGS ?? '').split(' ').filter(Boolean));
  const body = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'Say hello.' }] });
  const t = (url: string, key?: string) => ({ url, method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body });
  const metered = t(`${m.url}/proxy/bench-llm/v1/chat/completions`, m.key);
  await load(metered, 2);
  for (let r = 0; r < Number(process.env.ROUNDS ?? 3); r++) {
    const a = await load(metered, 5);
    const b = await load(t(`${raw.url}/proxy/bench-llm/v1/chat/completions`), 5);
    console.log(`metered ${a.requestsPerSecond.toFixed(0)} p50 ${a.p50Ms} p99 ${a.p99Ms} | raw ${b.requestsPerSecond.toFixed(0)} p99 ${b.p99Ms}`);
  }
  if (process.env.SEQ) {
    const direct = t(`${up.url}/v1/chat/completions`, 'sk');
    const lat = await sequentialLatency({ direct, raw: t(`${raw.url}/proxy/bench-llm/v1/chat/completions`), metered }, 2000);
    console.log(JSON.stringify(lat), 'added', (lat.metered.p50Ms - lat.direct.p50Ms).toFixed(3));
  }
} finally { for (const c of children) c.kill('SIGTERM'); }
