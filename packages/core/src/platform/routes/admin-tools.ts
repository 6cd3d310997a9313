import { Hono } from 'hono';
import { z } from 'zod';
import { RELEASE_VERSION_PATTERN } from '../../catalog/releases.js';
import { NO_STORE } from '../../http/errors.js';
import type { PlatformContext, PlatformEnv } from '../context.js';
import { PlatformError } from '../errors.js';
import { readJsonBody } from '../internal/json-body.js';
import { requirePlatformAdmin } from '../internal/session.js';

const TOOL_SLUG = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
const text = (max: number) => z.string().trim().max(max);

const name = text(120).min(1);
/** Every column an admin may set; all optional but `name` on creation. */
const optionalFields = {
  description: text(1000).optional(),
  category: text(60).min(1).optional(),
  iconUrl: z
    .url({ protocol: /^https?$/ })
    .max(2000)
    .nullable()
    .optional(),
  authMode: z.enum(['session', 'app_key', 'none']).optional(),
  sourceRepo: text(500).optional(),
  enabled: z.boolean().optional(),
  internal: z.boolean().optional(),
  surfaceAllConnections: z.boolean().optional(),
};
/** Paths of the public catalog under `/api/tools/`: a tool named so could not be read at `/api/tools/{slug}`. */
const RESERVED_TOOL_SLUGS: ReadonlySet<string> = new Set(['catalog', 'deployable']);
const createSchema = z.strictObject({
  slug: z
    .string()
    .regex(TOOL_SLUG, 'slug must be 3-64 lowercase letters, digits and hyphens')
    .refine(
      (slug) => !RESERVED_TOOL_SLUGS.has(slug),
      'slug must not be catalog or deployable: those are the lists',
    ),
  name,
  ...optionalFields,
});
const patchSchema = z
  .strictObject({ name: name.optional(), ...optionalFields })
  .refine((changes) => Object.keys(changes).length > 0, 'name at least one field to change');
const releaseSchema = z.strictObject({
  version: z
    .string()
    .regex(
      RELEASE_VERSION_PATTERN,
      'version must be 1-64 letters, digits, dots, hyphens, plus or underscores',
    ),
  /** The `service.yaml` text. */
  manifest: z.string().min(1).max(60_000),
  /**
   * What the deployer runs: a directory on the platform's machine and its start command (argv).
   * A release without one stays in the catalog but is neither deployable nor offered as such.
   */
  artifact: z
    .strictObject({
      type: z.literal('directory'),
      path: z.string().startsWith('/', 'artifact.path must be absolute').max(4096),
      start: z.array(z.string().min(1).max(4096)).min(1).max(64),
    })
    .optional(),
});

/**
 * The platform admins' catalog of deployable tools: list, add and change tools, publish releases
 * from a manifest (checked as `service validate` checks it) and withdraw them. Session cookie of a
 * platform admin; camelCase bodies; flat error bodies. Every change drops the catalog caches of
 * every instance.
 *
 * @see docs/api/tools.md "Admin"
 */
export function adminToolRoutes(ctx: PlatformContext): Hono<PlatformEnv> {
  const app = new Hono<PlatformEnv>();
  const tools = ctx.tools;
  const slugOf = (raw: string) => {
    if (!TOOL_SLUG.test(raw)) throw new PlatformError(404, 'Tool not found', { code: 'TOOL_NOT_FOUND' });
    return raw;
  };
  const detailOf = async (slug: string) => {
    const tool = await tools.tool(slug, { admin: true });
    if (!tool) throw new PlatformError(404, 'Tool not found', { code: 'TOOL_NOT_FOUND' });
    return tool;
  };

  app.get('/api/admin/tools', async (c) => {
    await requirePlatformAdmin(ctx, c, false);
    return c.json({ tools: await tools.listForAdmin() }, 200, NO_STORE);
  });

  app.post('/api/admin/tools', async (c) => {
    await requirePlatformAdmin(ctx, c, true);
    const { slug, ...fields } = await readJsonBody(c, createSchema);
    if (!(await tools.create(slug, fields))) {
      throw new PlatformError(409, 'A tool with this slug already exists', { code: 'TOOL_EXISTS' });
    }
    return c.json({ tool: await detailOf(slug) }, 201, NO_STORE);
  });

  app.patch('/api/admin/tools/:slug', async (c) => {
    await requirePlatformAdmin(ctx, c, true);
    const slug = slugOf(c.req.param('slug'));
    const changes = await readJsonBody(c, patchSchema);
    if (!(await tools.update(slug, changes))) {
      throw new PlatformError(404, 'Tool not found', { code: 'TOOL_NOT_FOUND' });
    }
    return c.json({ tool: await detailOf(slug) }, 200, NO_STORE);
  });

  app.post('/api/admin/tools/:slug/releases', async (c) => {
    const admin = await requirePlatformAdmin(ctx, c, true);
    const slug = slugOf(c.req.param('slug'));
    const body = await readJsonBody(c, releaseSchema, { maxBytes: 128 * 1024 });
    const result = await tools.publish({
      toolSlug: slug,
      version: body.version,
      manifest: body.manifest,
      publishedBy: admin.userId,
      ...(body.artifact ? { artifact: body.artifact } : {}),
    });
    if (!result.ok) {
      if (result.reason === 'invalid_manifest') {
        // The very list `service validate` prints, so a developer can find each line.
        return c.json(
          { message: 'The manifest is not valid', code: 'INVALID_MANIFEST', problems: result.problems },
          400,
          NO_STORE,
        );
      }
      if (result.reason === 'tool_not_found') {
        throw new PlatformError(404, 'Tool not found', { code: 'TOOL_NOT_FOUND' });
      }
      throw new PlatformError(409, 'This tool already has a release of this version', {
        code: 'RELEASE_EXISTS',
      });
    }
    return c.json({ release: result.release, tool: await detailOf(slug) }, 201, NO_STORE);
  });

  app.post('/api/admin/tools/:slug/releases/:version/withdraw', async (c) => {
    await requirePlatformAdmin(ctx, c, true);
    const slug = slugOf(c.req.param('slug'));
    if (!(await tools.withdraw(slug, c.req.param('version')))) {
      throw new PlatformError(404, 'Release not found', { code: 'RELEASE_NOT_FOUND' });
    }
    return c.json({ tool: await detailOf(slug) }, 200, NO_STORE);
  });

  return app;
}
