import fs from 'node:fs';
import path from 'node:path';

/** Seed data shipped in the repository's data/ folder (this file runs from dist/src/). */
export const SEED_DIR = path.resolve(__dirname, '../../data');

/** One JSON file of data/ (models.json, plans.json, …). */
export function readSeed<T>(name: string): T {
  return JSON.parse(fs.readFileSync(path.join(SEED_DIR, name), 'utf8')) as T;
}
