import Fastify from 'fastify';

/** The baseline: raw fastify answering a small JSON body, nothing else. */
const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) }).then(() => process.stdout.write('ready\n'));
