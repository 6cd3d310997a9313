// Every wire route under /api/service, including the streamed turns and the MCP door's paths.
import { toNextHandlers } from '@service/next';
import { getService } from '../../../../lib/service';

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = toNextHandlers(getService);
// Turns stream for as long as they run: never cache, never pre-render.
export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';
