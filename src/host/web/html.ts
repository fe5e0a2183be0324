import { escapeHtml } from '../../mail/templates';

/**
 * The one HTML shell of Atrium's own pages (landing, /app, /dashboard, the
 * error catalog). Everything a page loads comes from this server: no
 * third-party asset, so an offline on-premise install renders the same.
 */

/**
 * Pages load scripts and styles from 'self' only; API calls and graphql-ws go
 * to 'self' too ('self' covers ws: and wss: of the same host in current
 * browsers). No upgrade-insecure-requests: plain-HTTP on-premise installs exist.
 */
export const PAGE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/** A tagged template whose interpolations are escaped unless they are `Html` already. */
export class Html {
  constructor(readonly text: string) {}
  toString() {
    return this.text;
  }
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += renderValue(value) + strings[i + 1]!;
  });
  return new Html(out);
}

function renderValue(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(renderValue).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

export interface PageOptions {
  title: string;
  /** The page's main content. */
  main: Html;
  /** Module scripts under /assets/ (classic scripts: `classic`). */
  modules?: string[];
  classic?: string[];
  /** Data the page's script reads (rendered as a JSON script element, never executed). */
  data?: unknown;
  /** The nav link of this page, marked aria-current. */
  current?: string;
}

const NAV: [string, string][] = [
  ['/', 'Home'],
  ['/app', 'Account'],
  ['/dashboard', 'Dashboard'],
  ['/graphiql', 'GraphiQL'],
  ['/docs', 'API docs'],
];

/** A whole page: header with the site nav, main landmark, the page's scripts. */
export function renderPage(options: PageOptions): string {
  const nav = NAV.map(
    ([href, label]) => html`<a href="${href}"${options.current === href ? new Html(' aria-current="page"') : ''}>${label}</a>`,
  );
  // `</script` cannot appear inside the JSON: `<` is escaped as \u003c.
  const data =
    options.data === undefined
      ? ''
      : new Html(`<script type="application/json" id="page-data">${JSON.stringify(options.data).replace(/</g, '\\u003c')}</script>`);
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Atrium</title>
<link rel="stylesheet" href="/assets/atrium.css">
<link rel="icon" href="/assets/atrium.svg" type="image/svg+xml">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site"><a class="brand" href="/"><img src="/assets/atrium.svg" alt="" width="24" height="24"> Atrium</a>
<nav aria-label="Site">${nav}</nav></header>
<main id="main" tabindex="-1">
${options.main}
</main>
${data}${(options.classic ?? []).map((src) => html`<script src="/assets/${src}"></script>`)}${(options.modules ?? []).map(
    (src) => html`<script type="module" src="/assets/${src}"></script>`,
  )}
</body>
</html>
`.text;
}
