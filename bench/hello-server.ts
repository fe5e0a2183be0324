import Fastify from 'fastify';
import { apiSecurityHeaders } from '../src/host/security-headers';
import { CURRENT_API_VERSION } from '../src/version';

/**
 * The baseline: raw fastify answering a small JSON body, nothing else. With
 * BENCH_ATRIUM_HEADERS=1 it also sends the headers every Atrium response
 * carries (version, request id, security, rate limit), so the bench can show
 * what the HTTP contract's headers alone cost on this machine. With BENCH_BODY
 * (a JSON document) it answers that document instead of the hello-world: given
 * Atrium's own profile answer, it is the ceiling of any profile read, a server
 * that sends the same bytes and does nothing else.
 */
const app = Fastify({ logger: false });
if (process.env.BENCH_ATRIUM_HEADERS === '1') {
  const fixed = { 'x-service-version': CURRENT_API_VERSION, ...apiSecurityHeaders() };
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(fixed);
    reply.header('x-request-id', crypto.randomUUID());
    const reset = Math.floor(Date.now() / 1000) + 60;
    reply.header('x-ratelimit-limit', 120);
    reply.header('x-ratelimit-remaining', 119);
    reply.header('x-ratelimit-reset', reset);
    reply.header('ratelimit-policy', '"default";q=120;w=60');
    reply.header('ratelimit', '"default";r=119;t=60');
    done();
  });
}
const body: unknown = process.env.BENCH_BODY ? JSON.parse(process.env.BENCH_BODY) : undefined;
// Serialized per request, as any handler's answer is.
app.get('/', async () => body ?? { hello: 'world' });
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) }).then(() => process.stdout.write('ready\n'));
