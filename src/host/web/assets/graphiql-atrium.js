// GraphiQL wired to Atrium: queries and mutations over HTTP, subscriptions over
// graphql-ws on the same /graphql path, both with the header editor's
// Authorization (or, without one, the browser's session cookie).
import { storedSession } from './api.js';

const { createClient } = globalThis.graphqlWs;
const PLACEHOLDER = 'Bearer <access token: POST /v1/auth/login, or sign in on /app>';

const DEFAULT_QUERY = `# Atrium: identity, admin, billing and modules
# in one GraphQL schema.
#
# 1. Authorization header (Headers, below): sign
#    in on /app and it is filled in, or run Login.
# 2. Run Me: who you are.
# 3. Run AuditEvents (owners and admins), then
#    act in another tab: each audited action
#    arrives here live, over graphql-ws.

query Me {
  me {
    role
    company { name }
    user { email name }
  }
}

subscription AuditEvents {
  auditEvents { action actorLabel targetType createdAt }
}

mutation Login {
  login(input: { email: "you@example.com", password: "your password" }) {
    accessToken
  }
}
`;

/** The header editor's headers, without the placeholder (sending it would only be refused). */
function usableHeaders(headers = {}) {
  const out = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string' && value.includes('<')) continue;
    out[name] = value;
  }
  return out;
}

function isSubscription(params, documentAST) {
  const operations = (documentAST?.definitions ?? []).filter((d) => d.kind === 'OperationDefinition');
  const chosen = params.operationName ? operations.find((o) => o.name?.value === params.operationName) : operations[0];
  return chosen?.operation === 'subscription';
}

/** One socket per set of headers: a new token in the editor opens a new connection. */
const sockets = new Map();
function socketFor(headers) {
  const authorization = headers.authorization ?? headers.Authorization;
  const key = authorization ?? '';
  if (!sockets.has(key)) {
    sockets.set(
      key,
      createClient({
        url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
        connectionParams: authorization ? { authorization } : {},
        retryAttempts: 3,
      }),
    );
  }
  return sockets.get(key);
}

const http = GraphiQL.createFetcher({ url: new URL('/graphql', location.href).toString() });

function fetcher(params, options = {}) {
  const headers = usableHeaders(options.headers);
  if (isSubscription(params, options.documentAST)) return socketFor(headers).iterate(params);
  return http(params, { ...options, headers });
}

const session = storedSession();
const defaultHeaders = JSON.stringify({ Authorization: session ? `Bearer ${session.access_token}` : PLACEHOLDER }, null, 2);

ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    fetcher,
    defaultQuery: DEFAULT_QUERY,
    defaultHeaders,
    defaultEditorToolsVisibility: 'headers',
  }),
);
