/**
 * Parsing of environment settings, shared by the kernel's and every domain's
 * config loader. These read only the record they are given: `process.env`
 * itself is read in src/config.ts alone.
 */
export type Env = Record<string, string | undefined>;

/**
 * A setting, or the place it names (DATA_DIR), that Atrium cannot start
 * with. Its message names the setting and is whole on one line: the server
 * and the CLI print it as `atrium: <message>` without a stack, which is kept
 * for errors nobody foresaw.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
export const TIMER_MAX_MS = 2 ** 31 - 1;
/** The same bound for settings in seconds that become a timer's delay. */
export const TIMER_MAX_SECONDS = Math.floor(TIMER_MAX_MS / 1000);

/**
 * A whole number written in decimal digits only, from `min` to `max`: `1e3`,
 * `0x8`, `+5`, `8.0` and padded values are refused, as integer query
 * parameters are, rather than read as something the operator did not write.
 */
export function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(`${name} must be an integer ${range} (decimal digits only), got "${raw}"`);
  }
  return value;
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

export function list(env: Env, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function oneOf<const T extends readonly string[]>(env: Env, name: string, allowed: T, fallback: T[number]): T[number] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T[number];
}
