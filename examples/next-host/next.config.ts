import type { NextConfig } from 'next';

const config: NextConfig = {
  // The shared chat UI is a workspace package shipped as TypeScript source.
  transpilePackages: ['@service/example-chat-ui'],
  turbopack: {
    // Core opens its data folder and `.service/overrides.json` at paths read at run time (they
    // are the running server's, not files to ship), which the build's file tracing cannot follow.
    ignoreIssue: [{ path: '**/packages/core/dist/**', title: /^Dynamic filesystem access/ }],
  },
};

export default config;
