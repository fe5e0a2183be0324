import { loggableError } from './log-redaction';

/**
 * SIGHUP too: a closed terminal would otherwise end the process without closing
 * the database.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface SignalStop {
  /** From now on the first stop signal runs `stop`, then exits; one that came earlier runs it at once. */
  ready(stop: () => Promise<void>, log: (signal: NodeJS.Signals) => void): void;
}

/**
 * Installs the stop handlers before a server starts: a signal between its
 * start-up line and handlers installed afterwards killed it outright (no close,
 * no log line). A signal that arrives while it starts waits for `ready`.
 */
export function stopOnSignals(): SignalStop {
  let early: NodeJS.Signals | undefined;
  let run: ((signal: NodeJS.Signals) => void) | undefined;
  for (const signal of STOP_SIGNALS) {
    process.once(signal, () => (run ? run(signal) : (early ??= signal)));
  }
  return {
    ready(stop, log) {
      run = (signal) => {
        run = () => undefined;
        log(signal);
        stop()
          .then(() => process.exit(0))
          .catch((error) => {
            console.error(`atrium: ${loggableError(error)}`);
            process.exit(1);
          });
      };
      if (early) run(early);
    },
  };
}
