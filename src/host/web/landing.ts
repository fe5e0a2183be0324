import { ATRIUM_VERSION, CURRENT_API_VERSION } from '../../version';
import { html, renderPage } from './html';

/** What the landing page and the start-up log say about this server. */
export interface ServerSummary {
  health: { status: string; database: string };
  /** False until the first owner exists: the page then shows the first steps. */
  hasOwner: boolean;
}

/** The pages a newcomer wants first, relative to the server's address. */
const LANDING_LINKS: readonly { path: string; label: string; what: string }[] = [
  { path: '/docs', label: 'API docs', what: 'the REST API (OpenAPI 3.1), with "Try it out"' },
  { path: '/graphiql', label: 'GraphiQL', what: 'the GraphQL supergraph: queries, mutations and subscriptions' },
  { path: '/dashboard', label: 'Dashboard', what: "a company's audit events, credits, jobs and sessions, live" },
  { path: '/app', label: 'Account', what: 'sign in, see who you are, sign out' },
  { path: '/v1/health', label: 'Health', what: 'liveness and database reachability (JSON)' },
  { path: '/openapi.json', label: 'OpenAPI document', what: 'for code generators' },
];

const FIRST_OWNER_COMMAND = "npx atrium create-owner --email you@example.com --password '<12+ characters>' --company 'Your company'";

/**
 * The start-up line for one address the server listens on (fastify calls it
 * per address), saying what the landing page says: version, where the pages
 * are, and the first step while there is no owner.
 */
export function startupLine(base: string, summary: ServerSummary): string {
  const pages = LANDING_LINKS.filter((link) => link.path !== '/openapi.json')
    .map((link) => `${link.label.toLowerCase()} ${base}${link.path}`)
    .join(', ');
  const owner = summary.hasOwner ? '' : `; no owner yet: ${FIRST_OWNER_COMMAND}`;
  return `Atrium ${ATRIUM_VERSION} (API ${CURRENT_API_VERSION}) at ${base}/ (database ${summary.health.database}): ${pages}${owner}`;
}

export function landingPage(summary: ServerSummary): string {
  const healthy = summary.health.status === 'ok';
  const firstSteps = summary.hasOwner
    ? html`<section aria-labelledby="next"><h2 id="next">Next</h2>
<p><a href="/app">Sign in</a> to see your account, or open the <a href="/dashboard">dashboard</a> as an owner or admin.</p></section>`
    : html`<section aria-labelledby="first" class="callout"><h2 id="first">First steps: there is no owner yet</h2>
<ol>
<li>Create the first company and its owner on this machine:<pre><code>${FIRST_OWNER_COMMAND}</code></pre>
(or start the server once with <code>ATRIUM_OWNER_EMAIL</code>, <code>ATRIUM_OWNER_PASSWORD</code> and <code>ATRIUM_OWNER_COMPANY</code> set).</li>
<li><a href="/app">Sign in</a> with that address and password.</li>
<li>Invite your colleagues (<code>POST /v1/admin/invitations</code> in the <a href="/docs">API docs</a>, or <code>createInvitation</code> in <a href="/graphiql">GraphiQL</a>); each gets a link to set a password.</li>
</ol></section>`;
  const main = html`<h1>Atrium</h1>
<p class="lead">A self-hostable API server for an AI workspace: a GraphQL supergraph, live subscriptions and the REST API, over one embedded SQLite file.</p>
<dl class="facts">
<dt>Version</dt><dd>${ATRIUM_VERSION} (API version <code>${CURRENT_API_VERSION}</code>)</dd>
<dt>Health</dt><dd><span class="${healthy ? 'ok' : 'bad'}" id="health">${summary.health.status}</span> (database ${summary.health.database})</dd>
</dl>
${firstSteps}
<section aria-labelledby="where"><h2 id="where">Where to go</h2>
<ul class="links">${LANDING_LINKS.map((link) => html`<li><a href="${link.path}">${link.label}</a>: ${link.what}</li>`)}</ul>
</section>`;
  return renderPage({ title: 'Home', main, current: '/' });
}
