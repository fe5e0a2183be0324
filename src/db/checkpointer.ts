import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/** The WAL size (SQLite's default automatic checkpoint, 1,000 pages of 4 KiB) at which the background checkpoint starts. */
const START_BYTES = 4 * 1024 * 1024;
/**
 * The write connection's own automatic checkpoint, in pages: a backstop far
 * above what the background checkpoint lets the WAL reach, for when it falls
 * behind or has failed.
 */
export const BACKSTOP_PAGES = 16_000;

const WORKER = path.join(__dirname, 'checkpoint.worker.js');

interface Log {
  warn(obj: object, msg: string): void;
}

/**
 * Moves SQLite's WAL checkpoints off the event loop. In WAL mode a commit
 * appends its pages to the WAL, and every 1,000 pages the committing
 * connection copies the WAL back into the database and syncs both files, on
 * the thread that committed: a request that happened to commit then waited
 * for all of it. Measured on the ledger (bench/README.md), those checkpoints
 * were about half of a credit reserve's cost. A worker thread with its own
 * connection now checkpoints instead, every quarter of a second once the WAL
 * has first grown past 4 MB (a test's small database never starts it), and
 * the write connection's automatic checkpoint stays only as a backstop.
 * Durability is SQLite's: synchronous = NORMAL in WAL mode, as before.
 */
export class Checkpointer {
  private worker?: Worker;
  private readonly look: NodeJS.Timeout;
  private closed = false;
  /** Pages copied into the database by the background checkpoint so far. */
  checkpointed = 0;

  constructor(
    private readonly databaseFile: string,
    private readonly log: Log,
    private readonly intervalMs = 250,
  ) {
    this.look = setInterval(() => this.startWhenGrown(), 1000);
    this.look.unref();
  }

  private startWhenGrown(): void {
    if (this.worker || this.closed) return;
    let size: number;
    try {
      size = fs.statSync(`${this.databaseFile}-wal`).size;
    } catch {
      return; // no WAL yet
    }
    if (size >= START_BYTES) this.start();
  }

  /** Starts the background checkpoint now (tests; the server starts it when the WAL grows). */
  start(): void {
    if (this.worker || this.closed) return;
    const worker = new Worker(WORKER, { workerData: { file: this.databaseFile, intervalMs: this.intervalMs } });
    worker.unref();
    worker.on('message', (m: { checkpointed: number }) => (this.checkpointed += m.checkpointed));
    // Without it the backstop checkpoints on the write connection, as SQLite would; the next look starts a new one.
    worker.on('error', (error) => this.log.warn({ err: error }, 'the background WAL checkpoint failed; the write connection checkpoints meanwhile'));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
    });
    this.worker = worker;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.look);
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage('close');
    await exited;
  }
}
