/**
 * The door's pages in the product's page frame: its theme (accent and background colours), the
 * product name as header, and the images the theme may use. No page ships JavaScript.
 */
import { escapeHtml, htmlDocument, htmlPageHeaders } from '../../http/html.js';
import type { DoorTheme } from '../config.js';

/**
 * Headers of a door page. `formTargets` are origins a form may post or be redirected to (the
 * consent form's answer redirects the browser to the client); with none, forms are refused.
 */
export function pageHeaders(formTargets: string[] | null): Record<string, string> {
  return htmlPageHeaders({
    images: ["'self'", 'data:'],
    formTargets: formTargets === null ? [] : ["'self'", ...formTargets],
  });
}

export function layout(options: {
  title: string;
  productName: string;
  theme: Required<DoorTheme>;
  body: string;
}): string {
  const { accent, background } = options.theme;
  return htmlDocument({
    title: options.title,
    style: `:root{--accent:${accent};--bg:${background}}
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:var(--bg);color:#1b1d21}
main{max-width:34rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
header{font-weight:600;color:var(--accent);margin-bottom:1rem}
h1{font-size:1.35rem;margin:.25rem 0 1rem}h2{font-size:1.05rem;margin:1.5rem 0 .5rem}
code,pre{font:14px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f0f1f4;border-radius:6px}
code{padding:.1rem .3rem}pre{padding:.75rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
ul{padding-left:1.25rem}.muted{color:#5b606a;font-size:.9rem}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{font:inherit;padding:.6rem 1.2rem;border-radius:8px;border:1px solid var(--accent);cursor:pointer}
button.primary{background:var(--accent);color:#fff}button.secondary{background:#fff;color:var(--accent)}
.client{word-break:break-word}`,
    body: `<main>
<header>${escapeHtml(options.productName)}</header>
${options.body}
</main>`,
  });
}
