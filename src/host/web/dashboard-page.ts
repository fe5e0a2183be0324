import { html, renderPage } from './html';

/**
 * /dashboard: a company's admins watch it live over graphql-ws. The page is
 * static; /assets/dashboard.js opens the socket with the signed-in session,
 * a pasted token, or the service_token cookie of a single sign-on.
 */
export function dashboardPage(): string {
  const main = html`<h1>Dashboard <span id="company" class="sub"></span></h1>
<noscript><p class="problem">The dashboard needs JavaScript: it listens on a WebSocket.</p></noscript>
<p id="connection" class="connection" role="status" aria-live="polite">Not connected yet.</p>
<div id="problem" class="problem" role="alert" tabindex="-1" hidden></div>
<form id="token-form" class="card" novalidate hidden>
<p>Sign in on the <a href="/app">account page</a>, or paste an access token (or a company API key) of an owner or admin.</p>
<p><label for="token">Access token or API key</label><input id="token" name="token" autocomplete="off" spellcheck="false" required></p>
<p><button type="submit">Connect</button></p>
</form>
<div id="panels" hidden>
<section class="card" aria-labelledby="credits-title"><h2 id="credits-title">Credits</h2>
<p class="big"><span id="credits-available">–</span> <span class="unit">credits available</span></p>
<p id="credits-detail" class="meta"></p></section>
<section class="card" aria-labelledby="jobs-title"><h2 id="jobs-title">Research and bulk jobs</h2>
<table id="jobs"><caption class="visually-hidden">Jobs, newest first</caption>
<thead><tr><th scope="col">Kind</th><th scope="col">Job</th><th scope="col">Status</th><th scope="col">Progress</th></tr></thead><tbody></tbody></table>
<p id="jobs-empty" class="meta">No jobs yet.</p></section>
<section class="card" aria-labelledby="audit-title"><h2 id="audit-title">Audit events</h2>
<ol id="audit" class="events" aria-live="polite" aria-relevant="additions"></ol></section>
<section class="card" aria-labelledby="sessions-title"><h2 id="sessions-title">Active sessions</h2>
<table id="sessions"><caption class="visually-hidden">Signed-in sessions of the company, newest first</caption>
<thead><tr><th scope="col">User</th><th scope="col">Device</th><th scope="col">IP</th><th scope="col">Last seen</th></tr></thead><tbody></tbody></table></section>
<p><button type="button" id="disconnect">Use another token</button></p>
</div>`;
  return renderPage({ title: 'Dashboard', main, classic: ['vendor/graphql-ws.js'], modules: ['dashboard.js'], current: '/dashboard' });
}
