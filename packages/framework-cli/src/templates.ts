/**
 * What `service init` writes into the host source, once (never overwritten): the wiring, a tools
 * module with one example tool, and the model module when it names a file that is not there.
 */
import type { ImportExtension } from './import-style.js';
import type { Framework } from './project.js';

const DEFAULT_BRIEF = 'You help the signed-in user with this app.';

/**
 * The AI SDK major core is built for (its `ai` dependency, which a test keeps equal): a host on
 * another major hands core models it refuses at the first turn, and the wiring fails its types.
 */
export const AI_RANGE = '^6';

export interface WiringFiles {
  /** The module sync reads the tools from. */
  toolsModule: string;
  /** The module that composes the service (`createService`) and imports the model. */
  serviceModule: string;
  files: Array<{ path: string; content: string }>;
}

/** Where the wiring's service module goes. */
export function serviceModuleOf(framework: Framework, root: string): string {
  const path = framework === 'express' ? 'service.ts' : 'lib/service.ts';
  return root ? `${root}/${path}` : path;
}

export function wiringFor(options: {
  framework: Framework;
  root: string;
  modelImport: string;
  brief?: string;
  /** How the app writes relative imports (Express: its `tsconfig.json` and package type decide). */
  importExtension?: ImportExtension;
}): WiringFiles {
  const at = (path: string) => (options.root ? `${options.root}/${path}` : path);
  const system = JSON.stringify(options.brief?.trim() || DEFAULT_BRIEF);
  if (options.framework === 'express') {
    const tools = `./service-tools${options.importExtension ?? ''}`;
    return {
      toolsModule: at('service-tools.ts'),
      serviceModule: serviceModuleOf('express', options.root),
      files: [
        { path: at('service.ts'), content: expressService(options.modelImport, tools, system) },
        { path: at('service-tools.ts'), content: TOOLS },
      ],
    };
  }
  return {
    toolsModule: at('lib/service-tools.ts'),
    serviceModule: serviceModuleOf('next', options.root),
    files: [
      { path: at('app/api/service/[...service]/route.ts'), content: NEXT_ROUTE },
      { path: at('app/.well-known/[...path]/route.ts'), content: NEXT_WELL_KNOWN_ROUTE },
      { path: at('lib/service.ts'), content: nextService(options.modelImport, system) },
      { path: at('lib/service-tools.ts'), content: TOOLS },
    ],
  };
}

/**
 * Why a file at a wiring path is not the wiring (null when it looks like it): an app's own
 * `service.ts` must not be taken for the module that composes the service.
 */
export function notWiring(path: string, source: string): string | null {
  if (/(^|\/)service\.ts$/.test(path) && !/@service\/core|\bcreateService\b/.test(source)) {
    return 'it does not import @service/core nor call createService';
  }
  if (/(^|\/)route\.ts$/.test(path) && !/@service\/next/.test(source)) {
    return 'it does not import @service/next';
  }
  return null;
}

export const MODEL_MODULE = `/**
 * The model the app's agent talks to: any AI SDK model, e.g. \`openai('gpt-4o-mini')\` from
 * \`@ai-sdk/openai\`. Left undefined, the service picks one from its settings (SERVICE_MODEL).
 */
import type { LanguageModel } from 'ai';

export const model: LanguageModel | undefined = undefined;
`;

const TOOLS = `/**
 * The app's tools: what its agent and its MCP door may call, each as the signed-in user.
 * \`service sync\` reads this list into .service/catalog.json.
 */
import { type AnyHostTool, defineTool } from '@service/core/wire';

export const tools: AnyHostTool[] = [
  defineTool({
    name: 'say_hello',
    title: 'Say hello',
    description: 'Greets the signed-in user.',
    input: { type: 'object', properties: {}, additionalProperties: false },
    risk: 'read',
    execute: (_input, { principal }) => ({ greeting: \`Hello, \${principal.name ?? principal.subject}!\` }),
  }),
];
`;

function expressService(modelImport: string, toolsImport: string, system: string): string {
  return `/**
 * The service wire of this app: mount it before your own routes with
 * \`mountServiceRoutes(app)\` (it answers /api/service and the MCP door's discovery paths).
 */
import { createService, type Principal } from '@service/core/wire';
import { type ExpressAppLike, mountService } from '@service/express';
import { model } from ${JSON.stringify(modelImport)};
import { tools } from '${toolsImport}';

export const service = createService({
  // Who is signed in: return { subject: <your user id> } from your own session, or null.
  principal: (_request: Request): Principal | null => null,
  tools,
  system: ${system},
  ...(model ? { model } : {}),
});

export function mountServiceRoutes(app: ExpressAppLike): void {
  mountService(app, service);
}
`;
}

function nextService(modelImport: string, system: string): string {
  return `/**
 * The app's one service, created on the first request (never during \`next build\`) and shared by
 * every route handler of this server process. It is kept on \`globalThis\`, not in this module:
 * Next.js may evaluate this module more than once in one process (\`next dev\` below Next.js 16
 * does so each time it compiles a page), and a second service would find the store in use.
 * So in development, restart \`next dev\` to pick up a change to what the service is given here.
 */
import { createService, type Principal, type Service } from '@service/core/wire';
import { model } from ${JSON.stringify(modelImport)};
import { tools } from './service-tools';

const shared = globalThis as typeof globalThis & { __appService?: Promise<Service> };

export function getService(): Promise<Service> {
  if (!shared.__appService) {
    const made = createService({
      // Who is signed in: return { subject: <your user id> } from your own session, or null.
      principal: (_request: Request): Principal | null => null,
      tools,
      system: ${system},
      ...(model ? { model } : {}),
    });
    shared.__appService = made;
    // Failed (the store briefly unreachable): the next request makes it again.
    made.catch(() => {
      if (shared.__appService === made) shared.__appService = undefined;
    });
  }
  return shared.__appService;
}
`;
}

/** From app/api/service/[...service]/ back to the source root's lib/. */
const ROUTE_TO_LIB = '../../../../lib';

/** The files Next.js runs before its routes: an app has at most one of them. */
export const NEXT_PROXY_FILES = ['proxy.ts', 'proxy.js', 'middleware.ts', 'middleware.js'];

/** What marks the proxy init wrote, kept as it is on a later init. */
export const NEXT_PROXY_MARK = 'malformed_url';

/**
 * Next.js decodes a catch-all route's segments before it calls the handler, and answers a path
 * it cannot decode with its own 500 page. The proxy (`middleware` before Next.js 16) runs first.
 */
export function nextProxyModule(name: 'proxy' | 'middleware'): string {
  return `// Next.js decodes the segments of a catch-all route before it calls the route handler, and
// answers a path it cannot decode (/api/service/threads/%E0%A4%A) with its own 500 page: the wire
// never sees the request. This runs first and answers it as the wire does: 400 malformed_url.
export function ${name}(request: Request): Response | undefined {
  try {
    decodeURIComponent(new URL(request.url).pathname);
    return undefined;
  } catch {
    return Response.json(
      { error: { code: '${NEXT_PROXY_MARK}', message: 'The URL has a malformed percent-encoding.' } },
      { status: 400 },
    );
  }
}

export const config = { matcher: ['/api/service/:path*', '/.well-known/:path*'] };
`;
}

const NEXT_ROUTE = `// Every wire route under /api/service, including the streamed turns and the MCP door's endpoints
// (OPTIONS: their CORS preflights; without it Next answers them itself, with no CORS headers).
import { toNextHandlers } from '@service/next';
import { getService } from '${ROUTE_TO_LIB}/service';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = toNextHandlers(getService);
// Turns stream for as long as they run: never cache, never pre-render.
export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';
`;

/** From app/.well-known/[...path]/ back to the source root's lib/. */
const WELL_KNOWN_TO_LIB = '../../../lib';

const NEXT_WELL_KNOWN_ROUTE = `// The MCP door's discovery documents at the origin root; every other /.well-known path is a 404.
import { toNextWellKnownHandler } from '@service/next';
import { getService } from '${WELL_KNOWN_TO_LIB}/service';

export const { GET, OPTIONS } = toNextWellKnownHandler(getService);
export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';
`;
