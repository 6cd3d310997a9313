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

Options (anywhere on the line):
  --json                print one JSON object on stdout, errors included ({ "error": { ... } })
  -h, --help            show help; service <command> --help (or service help <command>) for one
  -v, --version         show the version

Examples:
  service init --yes
  service sync --strict
  service doctor --json
  service mcp server-json --domain example.com
  service whoami --json
`;

export const COMMAND_HELP: Record<string, string> = {
  init: `Usage: service init [dir] [options]

  --agent                 print the plan as JSON and write nothing
  --yes                   apply without asking
  --force                 regenerate the files under .service/ (never your source)
  --model-import <spec>   where the model comes from (default ./ai beside the wiring, ./ai.js when
                          the app's imports need .js; @/lib/ai on Next.js when the tsconfig maps
                          @/* to the source root)
  --brief <text>          what the app's agent is for
  --json                  print { applied, plan } once applied (needs --yes)

Examples:
  service init --agent
  service init --yes --brief "You help customers with their orders."
  service init apps/shop --yes --model-import @/lib/model
`,
  sync: `Usage: service sync [dir] [options]

Extracts the app's tools into .service/catalog.json and captures its <Remixable> wrappers
into .service/remixables.json, reporting the baselines that changed (their remixes drift).

  --strict                breaking changes fail (exit 2; 3 when saved references use them)
  --json                  print one JSON object { ok, exitCode, report, impact, notes }
  --url <url>             the running app (overrides SERVICE_URL): impact on saved references
  --report                push the report to the cloud (needs --key or SERVICE_API_KEY)
  --key <svc_...>         the cloud key
  --api-url <url>         the cloud (overrides SERVICE_CLOUD_URL)

Exit codes: 0 success (warnings included), 2 a <Remixable> sync cannot capture (any mode) or
breaking changes under --strict, 3 breaking changes that impact saved references under --strict,
1 anything else.

Examples:
  service sync
  service sync --strict --url http://localhost:3000
  service sync --json
`,
  doctor: `Usage: service doctor [dir] [--json]

Checks the wiring, then the running app at SERVICE_URL (environment, then .env; default
http://localhost:3000). Exit 0 green, 1 broken.

  --json                  print { ok, exitCode, url, checks: [{ level, text }] }

Examples:
  service doctor
  SERVICE_URL=http://localhost:4000 service doctor --json
`,
  refine: `Usage: service refine [dir] [options]

  --url <url>             the running app (overrides SERVICE_URL), for context
  --model-import <spec>   where the model comes from (default: init's choice; else the offline demo model)
  --ask <text>            what to change (repeatable)
  --yes                   apply the proposed diff without asking
  --json                  print { model, diff, applied, notes, transcript } (applies only with --yes)

Examples:
  service refine
  service refine --ask "hide cancel_order from outside agents" --yes
`,
  mcp: `Usage: service mcp <server-json|verify-domain> [options]

service mcp server-json
  --domain <domain>       the domain the registry name is made from
  --url <public-mcp-url>  the door's public URL (default https://<domain>/api/service/mcp)
  --force                 overwrite server.json
  --json                  print { file, server }

service mcp verify-domain
  --domain <domain>       required
  --key-out <path>        required: where the Ed25519 seed goes (mode 0600, never overwritten)
  --write-well-known <dir>  also write <dir>/.well-known/mcp-registry-auth
  --json                  print { domain, keyFile, challenge, challengeUrl, wellKnownFile }

Examples:
  service mcp server-json --domain example.com
  service mcp verify-domain --domain example.com --key-out registry.key --write-well-known public
`,
  cloud: `Usage: service cloud <subcommand> [options]

The cloud commands are not available in this version. Subcommands: login, logout, whoami, orgs,
keys, members, invite, deployments, usage, billing, validate, deploy, share, publish, pin-ship.

  --api-url <url>         the cloud (overrides SERVICE_CLOUD_URL)
  --key <svc_...>         the cloud key (overrides SERVICE_API_KEY); a malformed one exits 1 first
  --org <id>              the organization

Example:
  service cloud login
`,
};
