/**
 * Counts SQL statements at the driver: every better-sqlite3 statement run,
 * whichever connection prepared it (the ORM's or the read store's). Importing
 * this module patches the shared Statement prototype; node:test runs each test
 * file in its own process, so the patch stays within the file that asks for it.
 */
interface Statement {
  source: string;
}
type StatementMethod = (this: Statement, ...args: unknown[]) => unknown;
// better-sqlite3's typings are not needed here; only the Statement prototype is.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Database = require('better-sqlite3') as new (file: string) => { prepare(sql: string): object; close(): void };

const statementProto = (() => {
  const db = new Database(':memory:');
  const proto = Object.getPrototypeOf(db.prepare('select 1')) as Record<string, StatementMethod>;
  db.close();
  return proto;
})();

let recording: string[] | null = null;
/**
 * Looks that run whenever they fall due, never the statements a request's own work costs: the job
 * worker's poll for due work, the change signal's look at SQLite's data_version (at most every
 * 100 ms), and the check of a cached company policy's version once the data changed (at most every
 * 100 ms a company). Tests that count statements count what the operation reads.
 */
const PERIODIC_LOOKS = /^(select 1 from jobs where completed_at is null\b|pragma data_version$|select version from security_policies where company_id = \?$)/;
for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = statementProto[method]!;
  statementProto[method] = function (this: Statement, ...args: unknown[]) {
    const statement = recording && this.source.replace(/\s+/g, ' ').trim();
    if (statement && !PERIODIC_LOOKS.test(statement)) recording!.push(statement);
    return original.apply(this, args);
  };
}

/** The SQL statements run while `fn` runs. */
export async function sqlDuring(fn: () => Promise<unknown>): Promise<string[]> {
  // Let background work of earlier requests (e.g. "last seen" writes) settle first.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const log: string[] = [];
  recording = log;
  try {
    await fn();
  } finally {
    recording = null;
  }
  return log;
}
