import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { newKeyringEntry } from './crypto/secret-box';

export interface Secrets {
  jwtSecret: string;
  /** Salt for hashing client IPs kept in feedback records. */
  ipHashSalt: string;
  /**
   * Keyring of the secret box (`id:<base64>,…`, first seals): ENCRYPTION_KEYS when
   * given, followed by the key generated into secrets.json (kept for opening
   * what it sealed). The key is generated only when ENCRYPTION_KEYS is not set.
   */
  encryptionKeys: string;
}

/**
 * Secrets not given in the environment are generated on first start into
 * DATA_DIR/secrets.json (mode 0600) and reused afterwards, so tokens survive
 * restarts.
 */
export function loadSecrets(dataDir: string, given: Partial<Secrets> = {}): Secrets {
  const file = path.join(dataDir, 'secrets.json');
  let stored: Partial<Secrets> = {};
  if (fs.existsSync(file)) {
    stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Secrets>;
  }
  // Configured keys are never written to the file; a generated one is, and stays usable after ENCRYPTION_KEYS is set.
  const storedKeys = stored.encryptionKeys ?? (given.encryptionKeys ? undefined : newKeyringEntry());
  const secrets: Secrets = {
    jwtSecret: given.jwtSecret ?? stored.jwtSecret ?? randomBytes(48).toString('base64url'),
    ipHashSalt: given.ipHashSalt ?? stored.ipHashSalt ?? randomBytes(16).toString('base64url'),
    encryptionKeys: [given.encryptionKeys, storedKeys].filter(Boolean).join(','),
  };
  const toStore = {
    ...stored,
    jwtSecret: stored.jwtSecret ?? secrets.jwtSecret,
    ipHashSalt: stored.ipHashSalt ?? secrets.ipHashSalt,
    ...(storedKeys ? { encryptionKeys: storedKeys } : {}),
  };
  if (JSON.stringify(toStore) !== JSON.stringify(stored)) {
    // Owner-only, like the database file (src/db/orm.ts); an existing folder keeps its mode.
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, JSON.stringify(toStore, null, 2) + '\n', { mode: 0o600 });
  }
  return secrets;
}
