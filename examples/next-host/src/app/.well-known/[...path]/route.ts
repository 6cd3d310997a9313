// The MCP door's discovery documents at the origin root; every other /.well-known path is a 404.
import { toNextWellKnownHandler } from '@service/next';
import { getService } from '../../../lib/service';

export const { GET, OPTIONS } = toNextWellKnownHandler(getService);
export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';
