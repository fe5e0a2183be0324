/**
 * What never reaches a log line, whatever fails: passwords and their hashes,
 * key and token hashes, tokens, TOTP secrets, client secrets, cookies and
 * credentials in URLs (an SMTP_URL's). One place for every logger: the HTTP
 * app's pino (`pinoRedaction`) and the kernel's stderr logger of the CLI and
 * `atrium subgraph` (`redactLogRecord`).
 *
 * - By key: a value under a secret-named key is replaced, at any depth for
 *   warnings, errors and the kernel logger; for the other pino levels at the
 *   top level and under the usual containers (pino's `redact` with wildcards
 *   costs 30 to 125 µs a line, every access-log line would pay it).
 * - By content: error messages and stacks lose the string and blob literals
 *   of any SQL they quote (a failed insert's values), and any text loses URL
 *   credentials, Bearer tokens, API keys, JWTs and one-time link parameters.
 *   The SQL itself, the constraint, the error class and code stay.
 */

export const REDACTED = '[Redacted]';

/** Secret-named keys, as services and payloads spell them. */
const SECRET_KEYS = [
  'password',
  'passwordHash',
  'password_hash',
  'newPassword',
  'new_password',
  'currentPassword',
  'current_password',
  'keyHash',
  'key_hash',
  'tokenHash',
  'token_hash',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'idToken',
  'id_token',
  'cookieToken',
  'secret',
  'totpSecret',
  'totp_secret',
  'mfaSecret',
  'mfa_secret',
  'totpCode',
  'totp_code',
  'recoveryCodes',
  'recovery_codes',
  'clientSecret',
  'client_secret',
  'smtpUrl',
  'smtp_url',
  'jwtSecret',
  'encryptionKeys',
  'apiKey',
  'api_key',
  'plaintext',
  'authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
];

/**
 * The walker's rule, wider than the list: any key naming a password, secret,
 * hash, token (not `tokens`, a count), cookie, credential or verifier.
 */
const SECRET_KEY = /password|secret|hash$|token$|cookie|authorization|apikey|verifier|nonce|totpcode|recoverycodes|smtpurl|plaintext|encryptionkeys/;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key.toLowerCase().replace(/[_-]/g, ''));
}

/** Where pino looks by path (no wildcards): the top level and the containers request data is logged in. */
const CONTAINERS = ['', 'req.headers.', 'res.headers.', 'headers.', 'body.', 'input.', 'query.', 'params.', 'payload.', 'data.', 'user.', 'config.'];
const PINO_PATHS = CONTAINERS.flatMap((prefix) =>
  SECRET_KEYS.map((key) => (/^[A-Za-z_$][\w$]*$/.test(key) ? `${prefix}${key}` : `${prefix.replace(/\.$/, '')}["${key}"]`)),
);

/** Text that quotes SQL: a statement's opening words. */
const SQL = /\b(?:select\b[\s\S]*?\bfrom\b|insert\s+(?:or\s+\w+\s+)?into\b|update\s+(?:or\s+\w+\s+)?\S+\s+set\b|delete\s+from\b|replace\s+into\b|values\s*\(|pragma\b|(?:create|alter|drop)\s+(?:unique\s+)?(?:table|index)\b)/i;
/** A complete string or blob literal ('it''s', X'00ff'), or an unterminated one up to the end of its line (a statement cut short). */
const SQL_LITERAL = /'(?:[^']|'')*'|'[^\n]*/g;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@'"]+@/gi;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/-]+=*/gi;
const API_KEY = /\bsvc_[A-Za-z0-9_-]+/g;
const JWT = /\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
const SECRET_PARAMETER = /([?&;](?:token|code|state|challenge|access_token|refresh_token|id_token|password|secret|key|client_secret)=)[^&\s#'"]*/gi;

/** `text` without SQL literals (when it quotes SQL), URL credentials, tokens and secret link parameters. */
export function scrubText(text: string): string {
  let out = SQL.test(text) ? text.replace(SQL_LITERAL, "'?'") : text;
  out = out.replace(URL_CREDENTIALS, '$1***@');
  out = out.replace(BEARER, '$1 ***');
  out = out.replace(API_KEY, 'svc_***');
  out = out.replace(JWT, '***');
  return out.replace(SECRET_PARAMETER, '$1***');
}

/** A request URL for the access log: secret query parameters blanked (most URLs have no query: no work). */
export function loggableUrl(url: string): string {
  return url.includes('?') ? url.replace(SECRET_PARAMETER, '$1***') : url;
}

const MAX_DEPTH = 8;

/**
 * `value` with every secret-named key replaced, every string scrubbed and
 * every Error serialized (serializeError), at any depth up to MAX_DEPTH.
 * Copies only what changes.
 */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Error) return serializeError(value, depth);
  if (value instanceof Date || ArrayBuffer.isView(value)) return value;
  if (depth >= MAX_DEPTH) return '[Too deep]';
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((item, i) => {
      const redacted = redactDeep(item, depth + 1);
      if (redacted !== item) (out ??= [...value])[i] = redacted;
    });
    return out ?? value;
  }
  let out: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const redacted = isSecretKey(key) ? (item == null ? item : REDACTED) : redactDeep(item, depth + 1);
    if (redacted !== item) (out ??= { ...value })[key] = redacted;
  }
  return out ?? value;
}

/**
 * An error as a log shows it: its class, code, scrubbed message and stack,
 * its other own properties redacted (a driver error copies its cause's), and
 * its cause. Anything else thrown is redacted as a value.
 */
export function serializeError(error: unknown, depth = 0): unknown {
  if (!(error instanceof Error)) return redactDeep(error, depth);
  const out: Record<string, unknown> = { type: error.constructor?.name || error.name, message: scrubText(error.message) };
  if (error.stack) out.stack = scrubText(error.stack);
  if (depth >= MAX_DEPTH) return out;
  for (const [key, value] of Object.entries(error)) {
    if (key === 'message' || key === 'stack' || key === 'cause') continue;
    out[key] = isSecretKey(key) ? REDACTED : redactDeep(value, depth + 1);
  }
  if (error.cause !== undefined) out.cause = serializeError(error.cause, depth + 1);
  if (error instanceof AggregateError) out.errors = error.errors.map((inner) => serializeError(inner, depth + 1));
  return out;
}

/** A log record (the object of a log call) as the kernel logger writes it. */
export function redactLogRecord(record: Record<string, unknown>): Record<string, unknown> {
  return redactDeep(record) as Record<string, unknown>;
}

const WARN = 40;
const ERROR = 50;

/**
 * An error as the caller's own refusal: an application error under 500, alone, wrapped by GraphQL
 * (`originalError`), or already in its GraphQL form (the catalog code and status in `extensions`,
 * as a refused subscription reaches mercurius).
 */
function refusal(error: unknown): { code: unknown; status: number } | null {
  const original = (error as { originalError?: unknown } | null)?.originalError ?? error;
  if (!(original instanceof Error)) return null;
  const extensions = (original as { extensions?: { code?: unknown; http?: { status?: unknown } } }).extensions;
  const { code, status } = extensions?.http ? { code: extensions.code, status: extensions.http.status } : (original as { code?: unknown; status?: unknown });
  return typeof status === 'number' && status < 500 && typeof code === 'string' ? { code, status } : null;
}

/**
 * The errors of a library's `log.error(errors)` that are refusals the caller
 * was answered with (mercurius logs a refused subscription, another
 * company's job, at error level with its stack): their codes, or null when
 * anything in it is a real failure.
 */
function refusalsOnly(arg: unknown): { code: unknown; status: number }[] | null {
  const list = Array.isArray(arg) ? arg : [arg];
  const found = list.map(refusal);
  return found.length && found.every((r) => r !== null) ? (found as { code: unknown; status: number }[]) : null;
}

/** serializeError as pino's `err` serializer is typed. */
const serializedError = (error: unknown) => serializeError(error) as { type: string; message: string; stack: string; [key: string]: unknown };

/**
 * The redaction part of pino's options (src/app.ts): paths by key, the error
 * serializer, and a hook that redacts warnings and errors in depth. Below
 * warn the hook only passes the call on: the access log pays a function call.
 */
export function pinoRedaction() {
  return {
    redact: { paths: PINO_PATHS, censor: REDACTED },
    serializers: { err: serializedError, error: serializedError },
    hooks: {
      logMethod(this: { info(record: object, message: string): void }, args: unknown[], method: (...args: unknown[]) => void, level: number) {
        // A refusal the caller was answered with is no server error: one info line, no stack (else anyone could fill the error log).
        const refused = level >= ERROR && args.length === 1 ? refusalsOnly(args[0]) : null;
        if (refused) return this.info({ refused }, 'operation refused');
        if (level >= WARN) {
          // A plain object is the record, an Error goes to the serializer, strings are the message.
          args = args.map((arg) => (typeof arg === 'string' ? scrubText(arg) : arg instanceof Error ? arg : redactDeep(arg)));
          // An Error alone: pino would take its raw message for the line's.
          if (args[0] instanceof Error && typeof args[1] !== 'string') args.splice(1, 0, scrubText(args[0].message));
        }
        return method.apply(this, args);
      },
    },
  };
}

/** An error as one text for a terminal (a command's last words): its scrubbed stack, its other properties redacted. */
export function loggableError(error: unknown): string {
  const serialized = serializeError(error);
  if (typeof serialized !== 'object' || serialized === null) return String(serialized);
  const { type, message, stack, ...rest } = serialized as Record<string, unknown>;
  const head = typeof stack === 'string' ? stack : `${String(type)}: ${String(message)}`;
  let extra = '';
  try {
    extra = Object.keys(rest).length ? `\n${JSON.stringify(rest)}` : '';
  } catch {
    // A property JSON cannot write (a bigint, a cycle): the stack is enough.
  }
  return head + extra;
}
