import { errorFromAnswer, readBody, ServiceConfigError, ServiceConnectionError } from './errors.js';
import {
  callerHeaders,
  checkMethodAndBody,
  joinUrl,
  requireSettings,
  type TransportSettings,
} from './transport.js';

const SLUG = /^[a-z0-9][a-z0-9-]*$/;

/**
 * One call through the metering proxy. Only answers carrying `Service-Error-Code` are the
 * proxy's own and become typed errors; everything else is the provider's and is returned as is.
 */
export async function proxyFetch(
  settings: TransportSettings,
  provider: string,
  path: string,
  init: RequestInit = {},
): Promise<Response> {
  const { credential, baseUrl } = requireSettings(settings);
  if (!SLUG.test(provider)) {
    throw new ServiceConfigError('invalid_option', `Not a provider slug: "${provider}"`);
  }
  checkMethodAndBody(init.method ?? 'GET', init.body !== undefined && init.body !== null);
  const url = proxyUrl(baseUrl, provider, path);
  const headers = callerHeaders(init.headers);
  headers.set('authorization', `Bearer ${credential}`);
  let response: Response;
  try {
    response = await settings.fetch(url, {
      ...init,
      headers,
    });
  } catch (error) {
    if (init.signal?.aborted) throw init.signal.reason ?? error;
    throw new ServiceConnectionError('network_error', `Could not reach the proxy at ${baseUrl}`, {
      cause: error,
    });
  }
  if (response.ok || !response.headers.has('service-error-code')) return response;
  throw errorFromAnswer(response.status, response.headers, await readBody(response));
}

/**
 * The URL of `path` under `{baseUrl}/proxy/{provider}/`, as fetch will resolve it. A URL parser
 * resolves `..` (and `%2e%2e`, and a backslash as `/`), so a path could otherwise carry the key to any
 * route of the platform; one that leaves the provider's prefix is refused before it is sent.
 */
function proxyUrl(baseUrl: string, provider: string, path: string): string {
  const prefix = joinUrl(baseUrl, `/proxy/${provider}/`);
  let url: URL;
  let root: URL;
  try {
    url = new URL(joinUrl(prefix, path));
    root = new URL(prefix);
  } catch {
    throw new ServiceConfigError('invalid_option', `Not a URL: ${joinUrl(prefix, path)}`);
  }
  if (!url.pathname.startsWith(root.pathname)) {
    throw new ServiceConfigError(
      'invalid_option',
      `The proxy path "${path}" leads out of /proxy/${provider}/: pass a path of the provider's API`,
    );
  }
  return url.href;
}
