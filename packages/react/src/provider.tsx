/**
 * `<ServiceProvider>`: where the host mounted the wire, for every service component below it.
 * Without a provider the components use `/api/service` on the page's own origin.
 */
import { createContext, type ReactNode, useContext, useMemo } from 'react';
import type { SlotClient } from './slot-state.js';

export const DEFAULT_BASE_URL = '/api/service';

export interface ServiceProviderProps {
  /** Where the host mounted the wire: `/api/service` by default. */
  baseUrl?: string;
  /** The fetch to call it with; the page's own by default (a test or a host with its own auth passes one). */
  fetch?: typeof fetch;
  children?: ReactNode;
}

function clientFor(baseUrl: string, fetcher: typeof fetch | undefined): SlotClient {
  return {
    baseUrl,
    // Looked up at call time, so a fetch installed after this module loaded is the one used.
    fetch: fetcher ?? ((input, init) => globalThis.fetch(input, init)),
    reported: new Set(),
  };
}

const ServiceContext = createContext<SlotClient | null>(null);
let fallback: SlotClient | undefined;

export function ServiceProvider({ baseUrl = DEFAULT_BASE_URL, fetch, children }: ServiceProviderProps) {
  const client = useMemo(() => clientFor(baseUrl, fetch), [baseUrl, fetch]);
  return <ServiceContext.Provider value={client}>{children}</ServiceContext.Provider>;
}

/** The wire client of the nearest provider, or one on `/api/service`. */
export function useServiceClient(): SlotClient {
  const client = useContext(ServiceContext);
  if (client) return client;
  fallback ??= clientFor(DEFAULT_BASE_URL, undefined);
  return fallback;
}

/** The wire client of the nearest provider, or null outside one (a `<Remixable>` then stays the host's). */
export function useProvidedServiceClient(): SlotClient | null {
  return useContext(ServiceContext);
}
