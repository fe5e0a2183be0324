import { buildApp, listen } from './app';
import { ConfigError } from './env';
import { loggableError } from './kernel/log-redaction';
import { ListenRefused } from './kernel/listen-error';
import { stopOnSignals } from './kernel/signals';
import { tuneHeapForServing } from './kernel/v8-tuning';

/** `npm start`: listens, and stops cleanly on SIGINT, SIGTERM and SIGHUP, even one sent while it starts. */
async function main() {
  tuneHeapForServing();
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
  // A setting to change is one line, as a refused port is; anything else is a bug, with its stack.
  console.error(error instanceof ConfigError ? `atrium: ${error.message}` : loggableError(error));
  process.exit(1);
});
