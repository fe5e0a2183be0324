#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { loadConfig, loadSubgraphConfig } from './config';
import { boot, inContext, type Atrium } from './boot';
import { ConfigError } from './env';
import { isAppError } from './errors/catalog';
import { mailStatuses, type MailStatus } from './mail/outbox.entity';
import { jobStatus, jobStatuses, type JobRecord, type JobStatus } from './jobs/job-queue';
import { buildApp, listen } from './app';
import { loggableError } from './kernel/log-redaction';
import { describeListenError, ListenRefused } from './kernel/listen-error';
import { stopOnSignals } from './kernel/signals';
import { identityDomain } from './domains/identity';
import { isSubgraphName, serveSubgraph, subgraphDefinition } from '../subgraphs/serve';
import { UUID_PATTERN } from './ids';
import { tuneHeapForServing } from './kernel/v8-tuning';

const USAGE = `Usage: atrium [command] [options]

Commands:
  serve                       Start the API server (the default)
  create-owner                Create a company and its owner
      --email E --password P --company NAME [--superadmin]
      [--allow-duplicate-name]   (a name another company has is refused without it)
  create-api-key              Create a company API key (the key is shown once)
      --company <name or id> [--name N]   (name defaults to "cli")
  subgraph <name>             Serve one subgraph alone for a federation gateway
      <name>: identity | admin | billing | modules
      [--host H] [--port N]   (default: HOST/PORT settings)
  mail-outbox                 List recent mail (newest first) as JSON lines
      [--status pending|sent|failed|logged] [--limit N]   (limit defaults to 20)
      --show <id> [--html]    Print one mail: its headers and text (or its HTML)
      --retry                 Retry failed mail now (needs SMTP_URL)
  jobs                        List background jobs (newest first) as JSON lines
      [--status pending|running|failed|dead|done] [--kind K] [--limit N]   (limit defaults to 20)
      --show <id>             Print one job with its payload
      --retry <id>            Put a dead-lettered job back (attempts reset, due now)

Options:
  -h, --help                  Show this help

Settings come from the environment (DATA_DIR, DATABASE_FILE, HOST, PORT, ...).`;

/** A wrong invocation: printed with the usage, exit code 2. */
class UsageError extends Error {}

/** A refused request (validation, conflict, not found): exit code 1. */
class Refused extends Error {}

type Options = Record<string, { type: 'string' | 'boolean' }>;

function parse(args: string[], options: Options, positionals = 0) {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' }, ...options }, allowPositionals: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (parsed.positionals.length > positionals) {
    throw new UsageError(`Unexpected argument "${parsed.positionals[positionals]}"`);
  }
  return parsed as { values: Record<string, string | boolean | undefined>; positionals: string[] };
}

function required(values: Record<string, string | boolean | undefined>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string') throw new UsageError(`--${name} is required`);
  return value;
}

/** Maps a service error to one line per problem, naming the flag. */
function refusal(error: unknown): Refused | undefined {
  if (!isAppError(error)) return undefined;
  const issues = error.extra.errors;
  if (error.code === 'validation_error' && Array.isArray(issues)) {
    const lines = issues.map((i: { loc: unknown[]; msg: string }) => `invalid --${String(i.loc.at(-1))}: ${i.msg}`);
    return new Refused(lines.join('\n'));
  }
  return new Refused(error.message);
}

/** Boots every domain without background work, runs `fn` in one unit of work, and closes. */
async function oneShot<T>(fn: (atrium: Atrium) => Promise<T>): Promise<T> {
  const atrium = await boot(loadConfig());
  try {
    return await inContext(atrium.kernel.orm, () => fn(atrium));
  } catch (error) {
    throw refusal(error) ?? error;
  } finally {
    await atrium.close();
  }
}

async function createOwner(args: string[]) {
  const { values } = parse(args, {
    email: { type: 'string' },
    password: { type: 'string' },
    company: { type: 'string' },
    superadmin: { type: 'boolean' },
    'allow-duplicate-name': { type: 'boolean' },
  });
  if (values.help) return console.log(USAGE);
  const input = {
    email: required(values, 'email'),
    password: required(values, 'password'),
    company: required(values, 'company'),
    superadmin: values.superadmin === true,
    allowDuplicateName: values['allow-duplicate-name'] === true,
  };
  const { company, user } = await oneShot(async (s) => {
    try {
      return await s.domains.identity.accounts.createCompanyWithOwner(input);
    } catch (error) {
      // The service refuses a taken name; the flag that overrides it is the CLI's to name.
      if (isAppError(error) && error.extra.duplicate_of) {
        throw new Refused(`${error.message}. Pass --allow-duplicate-name to create another company with this name.`);
      }
      throw error;
    }
  });
  console.log(JSON.stringify({ company_id: company.id, user_id: user.id, email: user.email }));
}


async function createApiKey(args: string[]) {
  const { values } = parse(args, { company: { type: 'string' }, name: { type: 'string' } });
  if (values.help) return console.log(USAGE);
  const ref = required(values, 'company');
  const name = typeof values.name === 'string' ? values.name : 'cli';
  const { apiKey, plaintext } = await oneShot(async ({ domains: { identity } }) => {
    let company = UUID_PATTERN.test(ref) ? (await identity.accounts.companiesByIds([ref.toLowerCase()]))[0] : null;
    if (!company) {
      const named = await identity.accounts.findCompaniesByName(ref);
      if (named.length > 1) {
        throw new Refused(
          [`${named.length} companies are named "${ref}"; pass the id of the one you mean as --company:`, ...named.map((c) => `  ${c.id}  ${c.name} (created ${c.createdAt.toISOString()})`)].join('\n'),
        );
      }
      company = named[0] ?? null;
    }
    if (!company) throw new Refused(`No company with id or name "${ref}"`);
    return identity.apiKeys.createCompanyKey({ companyId: company.id, name });
  });
  console.log(JSON.stringify({ id: apiKey.id, name: apiKey.name, key: plaintext }));
  console.error('Store this key now: it is shown only once.');
}

/** The operator's mailbox when no SMTP server is configured (and a delivery log when one is). */
async function mailOutbox(args: string[]) {
  const { values } = parse(args, {
    status: { type: 'string' },
    limit: { type: 'string' },
    show: { type: 'string' },
    html: { type: 'boolean' },
    retry: { type: 'boolean' },
  });
  if (values.help) return console.log(USAGE);
  if (typeof values.show === 'string') {
    const id = values.show;
    const mail = await oneShot((s) => s.kernel.mailer.get(id));
    if (!mail) throw new Refused(`No mail with id "${id}"`);
    if (values.html) return console.log(mail.html);
    console.log(
      [
        `Id: ${mail.id}`,
        `To: ${mail.toAddress}`,
        `Subject: ${mail.subject}`,
        `Template: ${mail.template}`,
        `Status: ${mail.status} (attempts: ${mail.attempts}${mail.lastError ? `, last error: ${mail.lastError}` : ''})`,
        `Created: ${mail.createdAt.toISOString()}`,
        '',
        mail.text,
      ].join('\n'),
    );
    return;
  }
  if (values.retry) {
    const result = await oneShot(async (s) => {
      if (!s.kernel.mailer.smtpConfigured) throw new Refused('SMTP_URL is not set: mail stays in the outbox');
      return s.kernel.mailer.retryFailed();
    });
    return console.log(JSON.stringify(result));
  }
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer from 1 to 1000');
  const status = values.status;
  if (status !== undefined && !mailStatuses.includes(status as MailStatus)) {
    throw new UsageError(`--status must be one of ${mailStatuses.join(', ')}`);
  }
  const mails = await oneShot((s) => s.kernel.mailer.list({ status: status as MailStatus | undefined, limit }));
  for (const mail of mails) {
    console.log(
      JSON.stringify({
        id: mail.id,
        to: mail.toAddress,
        subject: mail.subject,
        template: mail.template,
        status: mail.status,
        attempts: mail.attempts,
        created_at: mail.createdAt.toISOString(),
      }),
    );
  }
}

/** A job as the CLI prints it; the payload only with `--show`. */
function jobLine(job: JobRecord, withPayload = false) {
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return JSON.stringify({
    id: job.id,
    kind: job.kind,
    status: jobStatus(job),
    attempts: job.attempts,
    max_attempts: job.maxAttempts,
    run_at: iso(job.runAt),
    lease_owner: job.leaseOwner,
    lease_expires_at: iso(job.leaseExpiresAt),
    last_error: job.lastError,
    dead_lettered_at: iso(job.deadLetteredAt),
    completed_at: iso(job.completedAt),
    dedupe_key: job.dedupeKey,
    created_at: iso(job.createdAt),
    ...(withPayload ? { payload: job.payload } : {}),
  });
}

/** The operator's view of the job queue; it runs no job itself. */
async function jobs(args: string[]) {
  const { values } = parse(args, {
    status: { type: 'string' },
    kind: { type: 'string' },
    limit: { type: 'string' },
    show: { type: 'string' },
    retry: { type: 'string' },
  });
  if (values.help) return console.log(USAGE);
  if (typeof values.show === 'string') {
    const id = values.show;
    const job = await oneShot((s) => s.kernel.jobs.get(id));
    if (!job) throw new Refused(`No job with id "${id}"`);
    return console.log(jobLine(job, true));
  }
  if (typeof values.retry === 'string') {
    const id = values.retry;
    const result = await oneShot((s) => s.kernel.jobs.retry(id));
    if (!result) throw new Refused(`No job with id "${id}"`);
    if (!result.retried) throw new Refused(`Job "${id}" is ${jobStatus(result.job)}, not dead-lettered`);
    return console.log(jobLine(result.job));
  }
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be an integer from 1 to 1000');
  const status = values.status;
  if (status !== undefined && !jobStatuses.includes(status as JobStatus)) {
    throw new UsageError(`--status must be one of ${jobStatuses.join(', ')}`);
  }
  const kind = typeof values.kind === 'string' ? values.kind : undefined;
  const list = await oneShot((s) => s.kernel.jobs.list({ status: status as JobStatus | undefined, kind, limit }));
  for (const job of list) console.log(jobLine(job));
}

async function serve(args: string[]) {
  const { values } = parse(args, {});
  if (values.help) return console.log(USAGE);
  tuneHeapForServing();
  const signals = stopOnSignals();
  const app = await buildApp();
  try {
    await listen(app);
  } catch (error) {
    throw error instanceof ListenRefused ? new Refused(error.message) : error;
  }
  signals.ready(
    () => app.close(),
    (signal) => app.log.info({ signal }, 'shutting down'),
  );
}

async function subgraph(args: string[]) {
  const { values, positionals } = parse(args, { host: { type: 'string' }, port: { type: 'string' } }, 1);
  if (values.help) return console.log(USAGE);
  const name = positionals[0];
  if (!name || !isSubgraphName(name)) throw new UsageError(`Name a subgraph: identity, admin, billing or modules`);
  const port = typeof values.port === 'string' ? Number(values.port) : undefined;
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) throw new UsageError('--port must be a port number');
  let config;
  try {
    // --host and --port move only where it listens: PUBLIC_URL (the token issuer) stays the server's.
    config = loadSubgraphConfig({
      ...(typeof values.host === 'string' ? { host: values.host } : {}),
      ...(port !== undefined ? { port } : {}),
    });
  } catch (error) {
    // A setting of the environment is not a wrong invocation: no usage after it.
    throw error instanceof ConfigError ? error : new UsageError((error as Error).message);
  }
  tuneHeapForServing();
  const signals = stopOnSignals();
  // Only the domains this subgraph serves, and identity, which authenticates every request. A serving
  // process: it runs the jobs of the domains it booted (the mail the identity subgraph queues, its sweeps).
  const atrium = await boot(config, { domains: [identityDomain, ...subgraphDefinition(name).domains], background: true });
  const { kernel } = atrium;
  let served;
  try {
    served = await serveSubgraph(name, {
      host: config.host,
      port: config.port,
      orm: kernel.orm,
      budgets: kernel.budgets,
      limits: config.graphql,
      trustProxy: config.trustProxy,
      bodyLimitBytes: config.bodyLimitBytes,
      domains: atrium.domains,
      log: kernel.log,
    });
  } catch (error) {
    await atrium.close();
    const line = describeListenError(error, config, {
      host: typeof values.host === 'string' ? '--host' : 'HOST',
      port: port !== undefined ? '--port' : 'PORT',
    });
    throw line ? new Refused(line) : error;
  }
  console.error(`atrium: ${name} subgraph listening at ${served.url}, accepting the tokens of ${config.publicUrl}`);
  signals.ready(
    async () => {
      await served.stop();
      await atrium.close();
    },
    (signal) => console.error(`atrium: ${signal}: shutting down`),
  );
}

const commands: Record<string, (args: string[]) => Promise<void>> = {
  serve,
  'create-owner': createOwner,
  'create-api-key': createApiKey,
  subgraph,
  'mail-outbox': mailOutbox,
  jobs,
};

async function main(argv: string[]) {
  const [first, ...rest] = argv;
  if (first === '--help' || first === '-h' || first === 'help') return console.log(USAGE);
  if (first === undefined || first.startsWith('-')) return serve(argv);
  const command = commands[first];
  if (!command) throw new UsageError(`Unknown command "${first}"`);
  return command(rest);
}

main(process.argv.slice(2)).catch((error) => {
  if (error instanceof UsageError) {
    console.error(`atrium: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (error instanceof Refused || error instanceof ConfigError) {
    for (const line of error.message.split('\n')) console.error(`atrium: ${line}`);
    process.exit(1);
  }
  // Unexpected: the stack, without what a failed statement quoted (src/kernel/log-redaction.ts).
  console.error(`atrium: ${loggableError(error)}`);
  process.exit(1);
});
