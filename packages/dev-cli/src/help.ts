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

Options:
  -h, --help        Show help; service <command> --help (or service help <command>) for one
  -v, --version     Show the version

The key lives in ~/.service/config.json (mode 0600), written by service login.
`;

export const COMMAND_HELP: Record<string, string> = {
  login: `Usage: service login [--api-base <url>] [--no-browser]

Opens the platform in your browser; after you sign in and click "Issue CLI key", a fresh key is
sent to this terminal and stored in ~/.service/config.json. Your previous CLI key is revoked.
Waits at most 5 minutes. When the browser cannot reach this terminal (SSH, containers), paste
the login code the page shows.

Options:
  --api-base <url>  Platform URL (default: the stored one, else http://localhost:8787); remembered
  --no-browser      Only print the URL to open
`,
  logout: `Usage: service logout

Revokes the stored key on the platform and removes ~/.service/config.json. The file is removed
even when the platform cannot be reached (with a warning).
`,
  whoami: `Usage: service whoami [--json]

Shows the account, tenant and credit balance of the stored key. Exits 1 when not logged in.

Options:
  --json            Print one JSON object
`,
  validate: `Usage: service validate [file] [--json]

Checks a deploy manifest (default: ./service.yaml) and lists every problem with its path.
Exits 0 when valid, 1 when not. Keys: name, version, runtime, title, description, category,
integrations, optional_integrations, restart_on, env, health, wizard (inputs and steps).

Examples:
  service validate
  service validate deploy/service.yaml --json

Options:
  --json            Print { file, valid, errors: [{ path, message, line, column }] }
`,
  dev: `Usage: service dev

Writes .env.service-dev (mode 0600) in the current folder: the stored key, tenant and platform
URL, and <SLUG>_API_KEY / <SLUG>_BASE_URL for each integration of ./service.yaml, which route
provider calls through the platform's metering proxy.
`,
  ssh: `Usage: service ssh <deployment>

Opens an interactive shell in a deployment (its slug or id) through the platform's ssh broker.
The terminal is put in raw mode; its size follows your window; the remote exit code is this
command's exit code.
`,
};
