import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Authenticated encryption for secrets at rest (TOTP secrets, connector
 * credentials): AES-256-GCM under a keyring, so keys can rotate.
 *
 * Sealed format: `v1:<keyId>:<iv b64url>:<ciphertext+tag b64url>`, 12-byte
 * random IV, 16-byte tag. The additional authenticated data is
 * `v1:<keyId>:<context>`, where the caller's context names the purpose and the
 * owner (`mfa:<userId>`): a value copied to another row, or relabelled with
 * another key id, fails to open.
 *
 * Keyring text: `id:<base64 32 bytes>,id:<…>`; the first key seals, every key
 * opens. Rotation: put a new key first and keep the old ones until everything
 * sealed under them has been re-sealed (`needsReseal`).
 */

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const B64URL = /^[A-Za-z0-9_-]+$/;

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

export interface KeyringEntry {
  id: string;
  key: Buffer;
}

/** Parses `id:<base64>,id:<base64>` (base64 or base64url, 32 bytes each). */
export function parseKeyring(text: string, source = 'ENCRYPTION_KEYS'): KeyringEntry[] {
  const entries: KeyringEntry[] = [];
  for (const item of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const colon = item.indexOf(':');
    const id = colon > 0 ? item.slice(0, colon) : '';
    const encoded = colon > 0 ? item.slice(colon + 1).trim() : '';
    if (!KEY_ID.test(id)) {
      throw new Error(`${source}: each entry must be <key id>:<base64 key>, the id 1 to 32 of [A-Za-z0-9_-]`);
    }
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) throw new Error(`${source}: key "${id}" is not base64`);
    const key = Buffer.from(encoded, 'base64');
    if (key.length !== KEY_BYTES) {
      throw new Error(`${source}: key "${id}" must be ${KEY_BYTES} bytes (base64 of 32 random bytes), got ${key.length}`);
    }
    entries.push({ id, key });
  }
  if (!entries.length) throw new Error(`${source}: no keys given`);
  return entries;
}

/** A new keyring entry in keyring text form, e.g. for DATA_DIR/secrets.json. */
export function newKeyringEntry(id = `local-${randomBytes(4).toString('hex')}`): string {
  return `${id}:${randomBytes(KEY_BYTES).toString('base64')}`;
}

export class SecretBox {
  /** The key id new values are sealed under. */
  readonly currentKeyId: string;
  private readonly keys = new Map<string, Buffer>();

  /** The first entry seals; later entries with an id already seen are ignored. */
  constructor(keyring: KeyringEntry[]) {
    if (!keyring.length) throw new Error('A secret box needs at least one key');
    for (const { id, key } of keyring) {
      if (!KEY_ID.test(id)) throw new Error(`Invalid key id "${id}"`);
      if (key.length !== KEY_BYTES) throw new Error(`Key "${id}" must be ${KEY_BYTES} bytes`);
      if (!this.keys.has(id)) this.keys.set(id, Buffer.from(key));
    }
    this.currentKeyId = keyring[0]!.id;
  }

  /** From one or more keyring texts, in order (the first key of the first text seals). */
  static fromKeyrings(...texts: (string | undefined)[]): SecretBox {
    return new SecretBox(texts.filter((t): t is string => !!t?.trim()).flatMap((t) => parseKeyring(t)));
  }

  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  seal(plaintext: string | Uint8Array, context: string): string {
    const keyId = this.currentKeyId;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(keyId)!, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(keyId, context));
    const data = typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext;
    const sealed = Buffer.concat([cipher.update(data), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, keyId, iv.toString('base64url'), sealed.toString('base64url')].join(':');
  }

  /** Throws SecretBoxError if the value is malformed, its key unknown, or it fails authentication. */
  open(sealed: string, context: string): Buffer {
    const { keyId, iv, data } = parse(sealed);
    const key = this.keys.get(keyId);
    if (!key) throw new SecretBoxError(`Sealed with key "${keyId}", which is not in the keyring`);
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(keyId, context));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(data.subarray(0, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new SecretBoxError('The sealed value failed authentication (tampered, or opened in the wrong context)');
    }
  }

  openString(sealed: string, context: string): string {
    return this.open(sealed, context).toString('utf8');
  }

  /** The id of the key a value was sealed under. */
  keyIdOf(sealed: string): string {
    return parse(sealed).keyId;
  }

  /** Whether the value was sealed under an older key and should be sealed again. */
  needsReseal(sealed: string): boolean {
    return parse(sealed).keyId !== this.currentKeyId;
  }
}

function aad(keyId: string, context: string): Buffer {
  return Buffer.from(`${VERSION}:${keyId}:${context}`, 'utf8');
}

function parse(sealed: string): { keyId: string; iv: Buffer; data: Buffer } {
  const parts = sealed.split(':');
  if (parts.length !== 4 || parts[0] !== VERSION) throw new SecretBoxError('Not a sealed value of a known version');
  const [, keyId, ivText, dataText] = parts as [string, string, string, string];
  if (!KEY_ID.test(keyId) || !B64URL.test(ivText) || !B64URL.test(dataText)) {
    throw new SecretBoxError('Malformed sealed value');
  }
  const iv = Buffer.from(ivText, 'base64url');
  const data = Buffer.from(dataText, 'base64url');
  if (iv.length !== IV_BYTES || data.length < TAG_BYTES) throw new SecretBoxError('Malformed sealed value');
  return { keyId, iv, data };
}
