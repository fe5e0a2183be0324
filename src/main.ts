import { buildApp } from './app';
import { inContext } from './boot';
import { startupLine } from './host/web';
import { loggableError } from './kernel/log-redaction';
import { describeListenError, SERVER_LISTEN_SETTINGS } from './kernel/listen-error';

/**
 * The signals that stop the server cleanly (the database closed, running jobs
 * handed back). SIGHUP too: a closed terminal would otherwise end it without that.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** The only file that listens. Stops cleanly on STOP_SIGNALS. */
async function main() {
  const app = await buildApp();
  const { host, port } = app.config;
  const summary = await inContext(app.kernel.orm, () => app.serverSummary());
  try {
    // One line per address, in place of fastify's "Server listening at …".
    await app.listen({ host, port, listenTextResolver: (address) => startupLine(address, summary) });
  } catch (error) {
    // buildApp opened the database and started the worker: close them before leaving.
    await app.close();
    const line = describeListenError(error, { host, port }, SERVER_LISTEN_SETTINGS);
    if (!line) throw error;
    console.error(`atrium: ${line}`);
    process.exit(1);
  }
  for (const signal of STOP_SIGNALS) {
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
