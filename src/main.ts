import { buildApp, listen } from './app';
import { loggableError } from './kernel/log-redaction';
import { ListenRefused } from './kernel/listen-error';

/**
 * The signals that stop the server cleanly (the database closed, running jobs
 * handed back). SIGHUP too: a closed terminal would otherwise end it without that.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** The only file that listens. Stops cleanly on STOP_SIGNALS. */
async function main() {
  const app = await buildApp();
  try {
    await listen(app);
  } catch (error) {
    if (!(error instanceof ListenRefused)) throw error;
    console.error(`atrium: ${error.message}`);
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
