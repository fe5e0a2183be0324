import { buildApp, listen } from './app';
import { loggableError } from './kernel/log-redaction';
import { ListenRefused } from './kernel/listen-error';
import { stopOnSignals } from './kernel/signals';

/** `npm start`: listens, and stops cleanly on SIGINT, SIGTERM and SIGHUP, even one sent while it starts. */
async function main() {
  const signals = stopOnSignals();
  const app = await buildApp();
  try {
    await listen(app);
  } catch (error) {
    if (!(error instanceof ListenRefused)) throw error;
    console.error(`atrium: ${error.message}`);
    process.exit(1);
  }
  signals.ready(
    () => app.close(),
    (signal) => app.log.info({ signal }, 'shutting down'),
  );
}

main().catch((error) => {
  console.error(loggableError(error));
  process.exit(1);
});
