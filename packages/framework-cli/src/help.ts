import { VERSION } from './version.js';

export const MAIN_HELP = `service ${VERSION}: add the service wire to an app, check it, publish its MCP door

Usage: service <command> [options]

Framework commands:
  init [dir]            wire the service into a Next.js or Express app
  sync [dir]            extract the app's tools into .service/catalog.json
  doctor [dir]          check the wiring and the running app
  refine [dir]          propose reviewable changes to .service/overrides.json
  mcp server-json       write server.json for the MCP registry
  mcp verify-domain     make the domain-ownership key and challenge
  cloud <subcommand>    not available in this version

Developer commands (the developer CLI): login, logout, whoami, validate, dev, ssh

Options: -h, --help    -v, --version
Run service <command> --help for a command's options.
`;

export const COMMAND_HELP: Record<string, string> = {
  init: `Usage: service init [dir] [options]

  --agent                 print the plan as JSON and write nothing
  --yes                   apply without asking
  --force                 regenerate the files under .service/ (never your source)
  --model-import <spec>   where the model comes from (default @/lib/ai for Next.js, ./ai for Express)
  --brief <text>          what the app's agent is for
`,
  sync: `Usage: service sync [dir] [options]

  --strict                breaking changes fail (exit 2; 3 when saved references use them)
  --json                  print one JSON object { ok, exitCode, report, impact, notes }
  --url <url>             the running app (overrides SERVICE_URL): impact on saved references
  --report                push the report to the cloud (needs --key or SERVICE_API_KEY)
  --key <svc_...>         the cloud key
  --api-url <url>         the cloud (overrides SERVICE_CLOUD_URL)

Exit codes: 0 success (warnings included), 2 unresolved slots or breaking changes under --strict,
3 breaking changes that impact saved references under --strict, 1 anything else.
`,
  doctor: `Usage: service doctor [dir]

Checks the wiring, then the running app at SERVICE_URL (default http://localhost:3000).
Exit 0 green, 1 broken.
`,
  refine: `Usage: service refine [dir] [options]

  --url <url>             the running app (overrides SERVICE_URL), for context
  --model-import <spec>   where the model comes from (default: init's choice; else the offline demo model)
  --ask <text>            what to change (repeatable)
  --yes                   apply the proposed diff without asking
`,
  mcp: `Usage: service mcp <server-json|verify-domain> [options]

service mcp server-json
  --domain <domain>       the domain the registry name is made from
  --url <public-mcp-url>  the door's public URL (default https://<domain>/api/service/mcp)
  --force                 overwrite server.json

service mcp verify-domain
  --domain <domain>       required
  --key-out <path>        required: where the Ed25519 seed goes (mode 0600, never overwritten)
  --write-well-known <dir>  also write <dir>/.well-known/mcp-registry-auth
`,
  cloud: `Usage: service cloud <subcommand>

The cloud commands are not available in this version.
`,
};
