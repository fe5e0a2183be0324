// /dashboard: one graphql-ws connection carries a snapshot query and three
// subscriptions (audit events, credits, jobs). It reconnects by itself after
// a dropped socket, says so, and reloads the snapshot so nothing is missed.
import { api, ApiProblem, clearMessages, showProblem, storedSession } from './api.js';

const { createClient } = globalThis.graphqlWs;
const PASTED_TOKEN = 'atrium.dashboard.token';
const MAX_EVENTS = 50;
/** Close codes the server uses for a refused credential (4403) and a bad request (4400): retrying cannot help. */
const FINAL_CLOSE_CODES = new Set([4400, 4403, 4406, 4409, 4429]);

const $ = (id) => document.getElementById(id);
const status = $('connection');
let client;
let droppedAt;

const SNAPSHOT = `query Dashboard {
  me { role company { id name } }
  credits { available monthly purchased granted held periodEnd }
  auditLog(perPage: 20) { items { id action actorType actorLabel targetType targetId ip createdAt } }
  companySessions(perPage: 50) { items { id email device ip lastSeenAt } }
  researchJobs(perPage: 10) { items { ...Research } }
  bulkJobs(perPage: 10) { items { ...Bulk } }
}
fragment Research on ResearchJob { id status query progress { phase step total } }
fragment Bulk on BulkJob { id status filename totalRows rowsCompleted rowsFailed }`;

const SESSIONS = 'query Sessions { companySessions(perPage: 50) { items { id email device ip lastSeenAt } } }';

function setStatus(text, kind) {
  status.textContent = text;
  status.dataset.state = kind;
}

const time = (iso) => new Date(iso).toLocaleTimeString();

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text ?? '';
  row.append(td);
  return td;
}

function showCredits(credits) {
  if (!credits) return;
  $('credits-available').textContent = credits.available.toLocaleString();
  const period = credits.periodEnd ? `; next monthly credits ${new Date(credits.periodEnd).toLocaleDateString()}` : '';
  $('credits-detail').textContent = `monthly ${credits.monthly}, purchased ${credits.purchased}, granted ${credits.granted}, held by running work ${credits.held}${period}`;
}

function auditItem(event) {
  const li = document.createElement('li');
  li.dataset.id = event.id;
  const when = document.createElement('time');
  when.dateTime = event.createdAt;
  when.textContent = time(event.createdAt);
  const action = document.createElement('code');
  action.textContent = event.action;
  const who = event.actorLabel ?? event.actorType;
  const target = event.targetType ? ` on ${event.targetType}${event.targetId ? ` ${event.targetId.slice(0, 8)}` : ''}` : '';
  li.append(when, ' ', action, ` by ${who}${target}${event.ip ? ` from ${event.ip}` : ''}`);
  return li;
}

function addAuditEvent(event, { live }) {
  const list = $('audit');
  if (list.querySelector(`[data-id="${CSS.escape(event.id)}"]`)) return;
  const item = auditItem(event);
  if (live) {
    item.classList.add('new');
    list.prepend(item);
  } else list.append(item);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
}

function showSessions(page) {
  const body = $('sessions').tBodies[0];
  body.replaceChildren();
  for (const session of page?.items ?? []) {
    const row = document.createElement('tr');
    cell(row, session.email);
    cell(row, session.device ?? 'unknown');
    cell(row, session.ip);
    cell(row, new Date(session.lastSeenAt).toLocaleString());
    body.append(row);
  }
}

function progressText(kind, job) {
  if (kind === 'research') {
    const p = job.progress;
    return p ? `${p.phase}, step ${p.step} of ${p.total}` : job.status === 'completed' ? 'report ready' : '';
  }
  const done = job.rowsCompleted + job.rowsFailed;
  return job.totalRows ? `${done} of ${job.totalRows} rows${job.rowsFailed ? ` (${job.rowsFailed} failed)` : ''}` : '';
}

function upsertJob(kind, job, { prepend }) {
  const body = $('jobs').tBodies[0];
  const key = `${kind}:${job.id}`;
  let row = body.querySelector(`[data-key="${CSS.escape(key)}"]`);
  if (!row) {
    row = document.createElement('tr');
    row.dataset.key = key;
    for (let i = 0; i < 4; i++) cell(row, '');
    if (prepend) body.prepend(row);
    else body.append(row);
  }
  const [kindCell, nameCell, statusCell, progressCell] = row.cells;
  kindCell.textContent = kind;
  nameCell.textContent = kind === 'research' ? job.query : job.filename;
  statusCell.textContent = job.status;
  progressCell.textContent = progressText(kind, job);
  row.dataset.status = job.status;
  $('jobs-empty').hidden = true;
}

function request(query, variables) {
  return new Promise((resolve, reject) => {
    let result;
    client.subscribe(
      { query, variables },
      {
        next: (value) => (result = value),
        error: reject,
        complete: () => resolve(result ?? {}),
      },
    );
  });
}

function graphqlProblem(errors) {
  const first = errors[0] ?? {};
  const extensions = first.extensions ?? {};
  return new ApiProblem(extensions.status ?? 400, { title: first.message, code: extensions.code, request_id: extensions.requestId });
}

async function loadSnapshot() {
  const { data, errors } = await request(SNAPSHOT);
  if (!data?.me) throw graphqlProblem(errors ?? [{ message: 'The dashboard could not be loaded' }]);
  if (data.me.role === 'MEMBER' || data.me.role === 'member') {
    throw new ApiProblem(403, { title: 'The dashboard is for owners and admins', detail: 'Ask an owner or admin of your company for access.', code: 'forbidden' });
  }
  $('company').textContent = data.me.company.name;
  showCredits(data.credits);
  $('audit').replaceChildren();
  for (const event of data.auditLog?.items ?? []) addAuditEvent(event, { live: false });
  showSessions(data.companySessions);
  $('jobs').tBodies[0].replaceChildren();
  for (const job of data.researchJobs?.items ?? []) upsertJob('research', job, { prepend: false });
  for (const job of data.bulkJobs?.items ?? []) upsertJob('bulk', job, { prepend: false });
  if (errors?.length) showProblem(graphqlProblem(errors));
}

function listen(query, onData) {
  client.subscribe(
    { query },
    {
      next: ({ data, errors }) => (data ? onData(data) : errors && showProblem(graphqlProblem(errors))),
      error: (error) => Array.isArray(error) && showProblem(graphqlProblem(error)),
      complete: () => {},
    },
  );
}

async function connectionParams() {
  const pasted = sessionStorage.getItem(PASTED_TOKEN);
  if (pasted) return { authorization: `Bearer ${pasted}` };
  if (storedSession()) {
    // A stored access token lasts minutes: a cheap call refreshes it when due.
    await api('GET', '/me/profile').catch(() => undefined);
    const session = storedSession();
    if (session) return { authorization: `Bearer ${session.access_token}` };
  }
  // Without a token the upgrade request carries the service_token cookie of a single sign-on.
  return {};
}

function askForToken(reason) {
  $('panels').hidden = true;
  const form = $('token-form');
  form.hidden = false;
  setStatus(reason ? `Not connected: ${reason}.` : 'Not connected.', 'off');
  form.elements.token.focus();
}

function connect() {
  clearMessages();
  client?.dispose();
  let started = false;
  client = createClient({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
    connectionParams,
    lazy: false,
    retryAttempts: Infinity,
    shouldRetry: (event) => !(event && typeof event.code === 'number' && FINAL_CLOSE_CODES.has(event.code)),
    retryWait: (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** retries) + Math.random() * 300)),
    on: {
      connecting: () => setStatus(droppedAt ? `Connection lost at ${droppedAt}; reconnecting…` : 'Connecting…', 'connecting'),
      connected: () => {
        const again = droppedAt;
        droppedAt = undefined;
        setStatus(again ? `Reconnected at ${new Date().toLocaleTimeString()} (the connection dropped at ${again}); reloaded.` : `Live since ${new Date().toLocaleTimeString()}.`, 'live');
        if (!started) {
          started = true;
          start().catch((error) => showProblem(error));
        } else loadSnapshot().catch((error) => showProblem(error));
      },
      closed: (event) => {
        if (event && FINAL_CLOSE_CODES.has(event.code)) {
          sessionStorage.removeItem(PASTED_TOKEN);
          askForToken(event.reason || 'the credential was refused');
          return;
        }
        if (started && !droppedAt) {
          droppedAt = new Date().toLocaleTimeString();
          setStatus(`Connection lost at ${droppedAt}; reconnecting…`, 'connecting');
        }
      },
    },
  });
}

async function start() {
  await loadSnapshot();
  $('panels').hidden = false;
  $('token-form').hidden = true;
  listen('subscription { auditEvents { id action actorType actorLabel targetType targetId ip createdAt } }', ({ auditEvents }) => {
    addAuditEvent(auditEvents, { live: true });
    if (/^(auth|session)\./.test(auditEvents.action)) {
      request(SESSIONS).then(({ data }) => data && showSessions(data.companySessions), () => undefined);
    }
  });
  listen('subscription { creditsChanged { available monthly purchased granted held periodEnd } }', ({ creditsChanged }) => showCredits(creditsChanged));
  listen(
    `subscription { companyJobProgress { kind research { ...Research } bulk { ...Bulk } } }
fragment Research on ResearchJob { id status query progress { phase step total } }
fragment Bulk on BulkJob { id status filename totalRows rowsCompleted rowsFailed }`,
    ({ companyJobProgress: update }) => {
      const job = update.research ?? update.bulk;
      if (job) upsertJob(update.kind, job, { prepend: true });
    },
  );
}

$('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = event.target.elements.token.value.trim().replace(/^Bearer\s+/i, '');
  if (!token) return;
  sessionStorage.setItem(PASTED_TOKEN, token);
  event.target.reset();
  connect();
});

$('disconnect').addEventListener('click', () => {
  client?.dispose();
  sessionStorage.removeItem(PASTED_TOKEN);
  askForToken('disconnected');
});

connect();
