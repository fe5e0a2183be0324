import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../env';
import type { KernelConfig } from './config';

/**
 * DATA_DIR, and DATABASE_FILE's folder when it lies elsewhere, must be
 * folders this process can write: secrets.json, server.json, uploads and
 * SQLite's -wal and -shm files are created in them. Checked before anything
 * is opened, so a wrong one is a line naming its setting, not SQLite's
 * "unable to open database file" from inside the first migration.
 */
export function checkDataDirs(config: Pick<KernelConfig, 'dataDir' | 'databaseFile'>): void {
  const dataDir = path.resolve(config.dataDir);
  writableFolder(dataDir, `DATA_DIR ${dataDir}`);
  if (config.databaseFile === ':memory:') return;
  const file = path.resolve(config.databaseFile);
  if (path.dirname(file) !== dataDir) writableFolder(path.dirname(file), `the folder of DATABASE_FILE ${file}`);
  const stat = statOrNull(file, `DATABASE_FILE ${file}`);
  if (!stat) return;
  if (!stat.isFile()) throw new ConfigError(`DATABASE_FILE ${file} is not a file`);
  try {
    fs.accessSync(file, fs.constants.R_OK | fs.constants.W_OK);
  } catch (error) {
    throw new ConfigError(`DATABASE_FILE ${file} is not writable by this process (${reason(error)})`);
  }
}

/** Creates the folder when missing (owner-only, as the database and secrets.json are); an existing one keeps its mode. */
function writableFolder(dir: string, what: string): void {
  let stat = statOrNull(dir, what);
  if (!stat) {
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A file where a folder of the path should be.
      if (code === 'ENOTDIR' || code === 'EEXIST') throw new ConfigError(`${what} is not a directory`);
      throw new ConfigError(`${what} cannot be created (${reason(error)})`);
    }
    stat = fs.statSync(dir);
  }
  if (!stat.isDirectory()) throw new ConfigError(`${what} is not a directory`);
  try {
    fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK);
  } catch (error) {
    throw new ConfigError(`${what} is not writable by this process (${reason(error)})`);
  }
}

function statOrNull(file: string, what: string): fs.Stats | null {
  try {
    return fs.statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ENOTDIR') throw new ConfigError(`${what} is not a directory: a file is in its path`);
    throw new ConfigError(`${what} cannot be read (${reason(error)})`);
  }
}

/** The system's reason without the path, which the message already names: "EACCES: permission denied". */
function reason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  return code ? `${code}: ${message.replace(/^\w+: /, '').replace(/,.*$/, '')}` : String(message);
}
