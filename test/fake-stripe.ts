import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback stand-in for the few Stripe API endpoints Atrium calls, speaking
 * Stripe's wire format: form-encoded requests with bracketed keys, JSON
 * answers, Stripe's error objects, and Idempotency-Key replays (the same key
 * answers the first response; with other parameters it is an idempotency_error). The real `stripe` SDK talks to it through
 * STRIPE_API_URL.
 */
export interface FakeStripe {
  url: string;
  /** Every request, in order: method, path, parsed form body and Idempotency-Key. */
  requests: { method: string; path: string; body: Record<string, unknown>; idempotencyKey: string | null; authorization: string | undefined }[];
  subscriptions: Map<string, { id: string; itemId: string; price: string; quantity: number }>;
  customers: Map<string, { defaultPaymentMethod: string | null; cards: { id: string; brand: string; last4: string; exp_month: number; exp_year: number }[] }>;
  close(): Promise<void>;
}

/** `a[b][0][c]=1` into `{ a: { b: [ { c: '1' } ] } }`. */
function parseForm(text: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const parts = key.split(/\[|\]\[|\]/).filter((p) => p !== '');
    let node: Record<string, unknown> | unknown[] = root;
    parts.forEach((part, i) => {
      const last = i === parts.length - 1;
      const nextIsIndex = !last && /^\d+$/.test(parts[i + 1]!);
      const slot = node as Record<string, unknown>;
      if (last) slot[part] = value;
      else {
        slot[part] ??= nextIsIndex ? [] : {};
        node = slot[part] as Record<string, unknown>;
      }
    });
  }
  return root;
}

function stripeError(res: http.ServerResponse, status: number, message: string, type = 'invalid_request_error') {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_fake' });
  res.end(JSON.stringify({ error: { type, message } }));
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const requests: FakeStripe['requests'] = [];
  // Per key: the first request's parameters and its answer.
  const replays = new Map<string, { params: string; answer: string }>();
  const subscriptions: FakeStripe['subscriptions'] = new Map();
  const customers: FakeStripe['customers'] = new Map();
  let sessions = 0;

  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const body = req.method === 'GET' ? Object.fromEntries(url.searchParams) : parseForm(text);
      const idempotencyKey = (req.headers['idempotency-key'] as string | undefined) ?? null;
      requests.push({ method: req.method ?? '', path: url.pathname, body, idempotencyKey, authorization: req.headers.authorization });
      if (!req.headers.authorization?.startsWith('Bearer sk_test_')) return stripeError(res, 401, 'Invalid API Key provided');
      const replayKey = idempotencyKey && `${req.method} ${url.pathname} ${idempotencyKey}`;
      const replay = replayKey ? replays.get(replayKey) : undefined;
      if (replay) {
        // As Stripe does: a key reused with other parameters is refused, not answered with the first response.
        if (replay.params !== text) {
          return stripeError(
            res,
            400,
            `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
            'idempotency_error',
          );
        }
        res.writeHead(200, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
        return res.end(replay.answer);
      }
      const answer = (object: unknown) => {
        const json = JSON.stringify(object);
        if (replayKey) replays.set(replayKey, { params: text, answer: json });
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${requests.length}` });
        res.end(json);
      };
      const now = Math.floor(Date.now() / 1000);
      let match: RegExpExecArray | null;
      if (req.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
        sessions++;
        const id = `cs_test_${sessions}`;
        return answer({
          id,
          object: 'checkout.session',
          mode: body.mode,
          client_reference_id: body.client_reference_id ?? null,
          metadata: body.metadata ?? {},
          payment_status: 'unpaid',
          status: 'open',
          url: `https://checkout.stripe.test/c/pay/${id}`,
          expires_at: now + 86400,
          created: now,
        });
      }
      if ((match = /^\/v1\/subscriptions\/([^/]+)$/.exec(url.pathname))) {
        const sub = subscriptions.get(match[1]!);
        if (!sub) return stripeError(res, 404, `No such subscription: '${match[1]}'`);
        if (req.method === 'POST') {
          const item = (body.items as { id: string; price: string }[] | undefined)?.[0];
          if (item) sub.price = item.price;
        }
        return answer({
          id: sub.id,
          object: 'subscription',
          status: 'active',
          items: { object: 'list', data: [{ id: sub.itemId, object: 'subscription_item', price: { id: sub.price, object: 'price' }, quantity: sub.quantity }] },
        });
      }
      if (req.method === 'GET' && (match = /^\/v1\/customers\/([^/]+)$/.exec(url.pathname))) {
        const customer = customers.get(match[1]!);
        if (!customer) return stripeError(res, 404, `No such customer: '${match[1]}'`);
        return answer({ id: match[1], object: 'customer', invoice_settings: { default_payment_method: customer.defaultPaymentMethod } });
      }
      if (req.method === 'GET' && url.pathname === '/v1/payment_methods') {
        const customer = customers.get(String(body.customer));
        if (!customer) return stripeError(res, 404, `No such customer: '${body.customer}'`);
        return answer({
          object: 'list',
          url: '/v1/payment_methods',
          has_more: false,
          data: customer.cards.map((card) => ({ id: card.id, object: 'payment_method', type: 'card', card: { ...card, funding: 'credit', country: 'US' } })),
        });
      }
      return stripeError(res, 404, `Unrecognized request URL (${req.method}: ${url.pathname})`);
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    subscriptions,
    customers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
