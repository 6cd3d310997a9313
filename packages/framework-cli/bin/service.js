#!/usr/bin/env node
// A committed entry, so installing links the bin before the first build; the CLI is dist/bin.js.
await import('../dist/bin.js');
