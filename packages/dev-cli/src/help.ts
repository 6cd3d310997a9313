/**
 * Help texts. Kept apart from the commands so `service --help` and `service <command> --help`
 * load no command code.
 */
export const MAIN_HELP = `service: the developer CLI of the service platform

Usage: service <command> [options]

Commands:
  login             Log in through the browser and store a CLI key
  logout            Revoke the stored key and remove it
  whoami            Show the account, tenant and credit balance
  validate [file]   Check service.yaml against the deploy manifest schema
  dev               Write .env.service-dev for local development
  ssh <deployment>  Open a shell in a deployment

Options (anywhere on the line):
  --json            Print one JSON object on stdout, errors included ({ "error": { ... } })
  -h, --help        Show help; service <command> --help (or service help <command>) for one
  -v, --version     Show the version

Examples:
  service login --api-base https://platform.example.com
  service whoami --json
  service validate deploy/service.yaml
  service dev --app-key service_sk_…

The key lives in ~/.service/config.json (mode 0600), written by service login.
`;

export const COMMAND_HELP: Record<string, string> = {
  login: `Usage: service login [--api-base <url>] [--no-browser]

Opens the platform in your browser; after you sign in and click "Issue CLI key", a fresh key is
sent to this terminal and stored in ~/.service/config.json. Your previous CLI key is revoked.
Waits at most 5 minutes. When the browser cannot reach this terminal (SSH, containers), paste
the login code the page shows. Or paste a CLI key made on the dashboard's Keys page: the platform
is asked whose it is, and it is stored as the CLI's key.

Checks first that the platform answers, so a wrong URL fails at once. What you paste is not
echoed.

Options:
  --api-base <url>  Platform URL (default: the stored login's, else http://localhost:8787);
                    remembered until logout
  --no-browser      Only print the URL to open
  --json            Print { email, tenantId, apiBase, key, configPath } once logged in

Examples:
  service login
  service login --api-base https://platform.example.com --no-browser
`,
  logout: `Usage: service logout

Revokes the stored key on the platform and removes ~/.service/config.json. The file is removed
even when the platform cannot be reached (with a warning).

Options:
  --json            Print { loggedOut, revoked, warning }

Example:
  service logout
`,
  whoami: `Usage: service whoami [--json]

Shows the account, tenant and credit balance of the stored key. Exits 1 when not logged in.

Options:
  --json            Print { email, tenantId, tenantName, balanceUsd, apiBase, key, keyKind }

Examples:
  service whoami
  service whoami --json
`,
  validate: `Usage: service validate [file] [--json]

Checks a deploy manifest (default: ./service.yaml) and lists every problem with its path.
Exits 0 when valid, 1 when not. Keys: name, version, runtime, title, description, category,
integrations, optional_integrations, restart_on, env, health, wizard (inputs and steps).

Options:
  --json            Print { file, valid, errors: [{ path, message, line, column }] }

Examples:
  service validate
  service validate deploy/service.yaml --json
`,
  dev: `Usage: service dev [--app-key <key>]

Writes .env.service-dev (mode 0600) in the current folder: SERVICE_BASE_URL, SERVICE_CLI_KEY (the
stored CLI key), SERVICE_TENANT_ID, SERVICE_API_KEY when --app-key is given (@service/sdk's
connections and events need an App Key, which the CLI key is not), and <SLUG>_API_KEY /
<SLUG>_BASE_URL for each integration of ./service.yaml, which route provider calls through the
platform's metering proxy with the CLI key.

Options:
  --app-key <key>   Your app's App Key (from the dashboard), written as SERVICE_API_KEY
  --json            Print { file, variables, appKey, gitignored }

Examples:
  service dev
  service dev --app-key service_sk_…
`,
  ssh: `Usage: service ssh <deployment>

Opens an interactive shell in a deployment (its slug or id) through the platform's ssh broker.
The terminal is put in raw mode; its size follows your window; the remote exit code is this
command's exit code. Interactive: --json does not apply.

Example:
  service ssh my-tool
`,
};
