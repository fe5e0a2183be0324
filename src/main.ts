import { buildApp } from './app';
import { inContext } from './boot';
import { startupLine } from './host/web';
import { loggableError } from './kernel/log-redaction';

/** The only file that listens. Stops cleanly on SIGINT/SIGTERM. */
async function main() {
  const app = await buildApp();
  const { host, port } = app.config;
  const summary = await inContext(app.kernel.orm, () => app.serverSummary());
  // One line per address, in place of fastify's "Server listening at …".
  await app.listen({ host, port, listenTextResolver: (address) => startupLine(address, summary) });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down');
      app
        .close()
        .then(() => process.exit(0))
        .catch((error) => {
          app.log.error(error);
          process.exit(1);
        });
    });
  }
}

main().catch((error) => {
  console.error(loggableError(error));
  process.exit(1);
});
