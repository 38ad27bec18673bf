import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Repos } from '../store/index.js';

/**
 * Secrets at rest (webhook signing secrets, SIP trunk passwords): AES-256-GCM under the service's
 * encryption key (OUTDIAL_ENCRYPTION_KEY, or the one generated into the data dir), never the JWT
 * secret, so a leaked session-signing key does not open the database and either can be rotated
 * alone. A sealed value names its key: `v2:<key id>:` + base64(iv | tag | ciphertext). Older keys
 * (OUTDIAL_PREVIOUS_ENCRYPTION_KEYS) still open values; every start re-seals them under the
 * current key.
 */
export interface SealerKeys {
  /** Seals and opens. */
  current: string;
  /** Only open: keys being rotated out. */
  previous: string[];
  /**
   * Opens `v1:` values, the trunk passwords sealed before v2 under a key derived from the JWT
   * secret. Nothing is sealed with it any more.
   */
  legacyJwtSecret: string;
}

const PREFIX = 'v2:';
const LEGACY_PREFIX = 'v1:';

interface Key {
  id: string;
  aes: Buffer;
}

/** A key id: 8 hex digits of a hash of the key, so an operator never has to name keys. */
export function encryptionKeyId(material: string): string {
  return createHash('sha256').update(`outdial:encryption-key-id:${material}`).digest('hex').slice(0, 8);
}

function deriveKey(material: string): Key {
  const aes = Buffer.from(hkdfSync('sha256', material, 'outdial', 'outdial:sealed-secrets:v2', 32));
  return { id: encryptionKeyId(material), aes };
}

export class Sealer {
  private readonly current: Key;
  private readonly keys = new Map<string, Key>();
  private readonly legacy: Buffer;

  constructor(keys: SealerKeys) {
    this.current = deriveKey(keys.current);
    for (const key of [this.current, ...keys.previous.map(deriveKey)]) {
      if (!this.keys.has(key.id)) this.keys.set(key.id, key);
    }
    this.legacy = createHash('sha256').update(`outdial:sip-trunk-passwords:${keys.legacyJwtSecret}`).digest();
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.aes, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${this.current.id}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /**
   * The clear value. A value that is not sealed at all (a webhook secret written before sealing,
   * `whsec_...`) is returned as it is: the start re-seals those. Throws for a key this process
   * does not hold or a value that was tampered with.
   */
  open(stored: string): string {
    if (stored.startsWith(PREFIX)) {
      const end = stored.indexOf(':', PREFIX.length);
      const id = stored.slice(PREFIX.length, end);
      const key = end > 0 ? this.keys.get(id) : undefined;
      if (!key) throw new Error(`sealed under key ${id || '?'}, which this process does not hold`);
      return decrypt(key.aes, stored.slice(end + 1));
    }
    if (stored.startsWith(LEGACY_PREFIX)) return decrypt(this.legacy, stored.slice(LEGACY_PREFIX.length));
    return stored;
  }

  /** True when the value is already sealed under the current key. */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${PREFIX}${this.current.id}:`);
  }
}

function decrypt(key: Buffer, encoded: string): string {
  const raw = Buffer.from(encoded, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** The columns that hold sealed secrets, by table: the re-seal walks exactly these. */
const SEALED_COLUMNS = {
  users: ['webhook_secret', 'previous_webhook_secret'],
  sip_trunks: ['password_encrypted'],
} as const;

type SealedTable = keyof typeof SEALED_COLUMNS;

export interface ResealResult {
  /** Values moved to the current key (from clear text, v1, or an older key). */
  resealed: number;
  /** Values this process cannot open: sealed under a key it does not hold, or damaged. */
  unreadable: number;
}

/** Rows read per page: 500 keeps one page's updates well under a second on PGlite. */
const PAGE = 500;

/**
 * Moves every sealed column to the current key (clear-text webhook secrets from before sealing,
 * v1 trunk passwords, values under a previous key). Each update is conditional on the value read,
 * so a rotation or a second process re-sealing at the same moment is never overwritten.
 */
export async function resealSecrets(repos: Repos, sealer: Sealer): Promise<ResealResult> {
  const result: ResealResult = { resealed: 0, unreadable: 0 };
  for (const table of Object.keys(SEALED_COLUMNS) as SealedTable[]) {
    for (const column of SEALED_COLUMNS[table]) {
      let after = '';
      for (;;) {
        const rows = await repos.sealedColumns.notSealedWith(
          table,
          column,
          `${PREFIX}${sealer.currentKeyId}:`,
          after,
          PAGE,
        );
        for (const row of rows) {
          let plain: string;
          try {
            plain = sealer.open(row.value);
          } catch {
            result.unreadable++;
            continue;
          }
          result.resealed += await repos.sealedColumns.replace(
            table,
            column,
            row.id,
            row.value,
            sealer.seal(plain),
          );
        }
        const last = rows.at(-1);
        if (!last || rows.length < PAGE) break;
        after = last.id;
      }
    }
  }
  return result;
}

/**
 * The start's re-seal. A value no key of this process opens means the hosts do not share their
 * encryption key: starting anyway would sign webhooks with nothing and seal new secrets that the
 * other hosts cannot open, so the start stops with what to set.
 */
export async function resealAtStart(repos: Repos, sealer: Sealer, logger: Logger): Promise<ResealResult> {
  const result = await resealSecrets(repos, sealer);
  if (result.resealed > 0) {
    logger.info(
      { resealed: result.resealed, keyId: sealer.currentKeyId },
      'sealed stored secrets under the current encryption key',
    );
  }
  if (result.unreadable > 0) {
    throw new Error(
      `${result.unreadable} stored secret(s) are sealed under an encryption key this process does not hold (current key id ${sealer.currentKeyId}): ` +
        'every host must share OUTDIAL_ENCRYPTION_KEY; during a rotation list the old key in OUTDIAL_PREVIOUS_ENCRYPTION_KEYS',
    );
  }
  return result;
}
