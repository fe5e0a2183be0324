import { redactLogRecord, scrubText } from './log-redaction';

/** The logging the kernel and the domains need; pino (fastify's `app.log`) fits as is. */
export interface Logger {
  debug(obj: Record<string, unknown>, msg: string): void;
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/** JSON lines on stderr at `level` and above, redacted (./log-redaction.ts): the logger outside the HTTP app (CLI, subgraphs). */
export function stderrLogger(level = 'info'): Logger {
  const min = LEVELS.indexOf(level as (typeof LEVELS)[number]);
  const at = (name: (typeof LEVELS)[number]) => (obj: Record<string, unknown>, msg: string) => {
    if (min < 0 || LEVELS.indexOf(name) < min) return; // unknown level (e.g. "silent"): quiet
    process.stderr.write(`${JSON.stringify({ level: name, time: Date.now(), ...redactLogRecord(obj), msg: scrubText(msg) })}\n`);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * The process's logger as services hold it: stderr JSON lines until a host
 * hands over its own (the HTTP app passes pino's `app.log`), so a service
 * built once logs through whichever is current.
 */
export class SwitchableLogger implements Logger {
  constructor(private target: Logger) {}

  use(target: Logger): void {
    this.target = target;
  }

  debug(obj: Record<string, unknown>, msg: string): void {
    this.target.debug(obj, msg);
  }

  info(obj: Record<string, unknown>, msg: string): void {
    this.target.info(obj, msg);
  }

  warn(obj: Record<string, unknown>, msg: string): void {
    this.target.warn(obj, msg);
  }

  error(obj: Record<string, unknown>, msg: string): void {
    this.target.error(obj, msg);
  }
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
