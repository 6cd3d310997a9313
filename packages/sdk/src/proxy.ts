import { errorFromAnswer, readBody, ServiceConfigError, ServiceConnectionError } from './errors.js';
import { joinUrl, requireSettings, type TransportSettings } from './transport.js';

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
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${credential}`);
  let response: Response;
  try {
    response = await settings.fetch(joinUrl(baseUrl, `/proxy/${provider}/${path.replace(/^\/+/, '')}`), {
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
