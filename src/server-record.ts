import fs from 'node:fs';
import path from 'node:path';

/**
 * What a serving Atrium server records in DATA_DIR for the processes that
 * share its data: `atrium subgraph` takes its PUBLIC_URL from here when it is
 * given none, so it checks the server's tokens (PUBLIC_URL is their issuer)
 * and mails the server's links, wherever it listens itself.
 */
const FILE = 'server.json';

interface ServerRecord {
  public_url: string;
}

/** Written on every start (the server's PUBLIC_URL may have changed since); replaced whole, never seen half-written. */
export function recordServer(dataDir: string, publicUrl: string): void {
  const file = path.join(dataDir, FILE);
  const record: ServerRecord = { public_url: publicUrl };
  const text = JSON.stringify(record) + '\n';
  if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === text) return;
  fs.mkdirSync(dataDir, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, text, { mode: 0o600 });
  fs.renameSync(temp, file);
}

/** The PUBLIC_URL the server last started with, if a server has started on this DATA_DIR. */
export function recordedPublicUrl(dataDir: string): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dataDir, FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let record: Partial<ServerRecord> | null;
  try {
    record = JSON.parse(text) as Partial<ServerRecord> | null;
  } catch {
    record = null;
  }
  const url = record?.public_url;
  if (typeof url === 'string' && url) return url;
  // Damaged (a disk filled mid-write by something else, a hand edit): say which file and both ways out.
  throw new Error(
    `${path.join(dataDir, FILE)} does not hold the server's PUBLIC_URL ({"public_url": "..."}); ` +
      'start the server once to write it again, or give this process PUBLIC_URL',
  );
}
