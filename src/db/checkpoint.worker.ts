import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

/**
 * The background checkpoint (see checkpointer.ts): its own connection to the
 * database file, copying the WAL's committed pages into the database every
 * `intervalMs`. PASSIVE never waits for a lock and never blocks the writer;
 * what it cannot copy yet (a reader still on an older snapshot) it copies
 * next time.
 */
const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new Database(file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');

const timer = setInterval(() => {
  const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
  if (result && result.checkpointed > 0) parentPort!.postMessage({ checkpointed: result.checkpointed, log: result.log });
}, intervalMs);

parentPort!.on('message', (message) => {
  if (message !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
