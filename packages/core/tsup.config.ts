import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'store/index': 'src/store/index.ts',
    'identity/index': 'src/identity/index.ts',
    'http/index': 'src/http/index.ts',
    'billing/index': 'src/billing/index.ts',
    'platform/index': 'src/platform/index.ts',
    'schemas/index': 'src/schemas/index.ts',
    'proxy/index': 'src/proxy/index.ts',
    'connections/index': 'src/connections/index.ts',
    'catalog/index': 'src/catalog/index.ts',
    'deploy/index': 'src/deploy/index.ts',
    'apps/index': 'src/apps/index.ts',
    'wire/index': 'src/wire/index.ts',
    'agent/index': 'src/agent/index.ts',
    'door/index': 'src/door/index.ts',
  },
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
