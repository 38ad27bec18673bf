import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export interface ServiceSecrets {
  adminToken: string;
  jwtSecret: string;
  /** The key that seals secrets at rest; hosts that share a database must share it. */
  encryptionKey: string;
  /** True when this start generated the admin token (it is printed once, then only kept in the file). */
  adminTokenGenerated: boolean;
}

/**
 * The admin token, the JWT signing secret and the encryption key come from the environment when set; otherwise they
 * are generated once into the data dir (mode 0600) and read back on later starts. The file is
 * created with O_EXCL, so two processes starting together agree on one value.
 */
export function loadSecrets(
  dataDir: string,
  fromEnv: { adminToken?: string; jwtSecret?: string; encryptionKey?: string },
): ServiceSecrets {
  fs.mkdirSync(dataDir, { recursive: true });
  const admin = fromEnv.adminToken
    ? { value: fromEnv.adminToken, generated: false }
    : readOrCreate(path.join(dataDir, 'admin-token'), () => `odadm_${randomBytes(24).toString('base64url')}`);
  const jwt = fromEnv.jwtSecret
    ? { value: fromEnv.jwtSecret, generated: false }
    : readOrCreate(path.join(dataDir, 'jwt-secret'), () => randomBytes(48).toString('base64url'));
  const encryption = fromEnv.encryptionKey
    ? { value: fromEnv.encryptionKey }
    : readOrCreate(path.join(dataDir, 'encryption-key'), () => randomBytes(32).toString('base64url'));
  return {
    adminToken: admin.value,
    jwtSecret: jwt.value,
    encryptionKey: encryption.value,
    adminTokenGenerated: admin.generated,
  };
}

function readOrCreate(file: string, make: () => string): { value: string; generated: boolean } {
  const value = make();
  try {
    fs.writeFileSync(file, `${value}\n`, { flag: 'wx', mode: 0o600 });
    return { value, generated: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // Another process may have created the file a moment ago and not yet written it.
  for (let wait = 0; wait < 20; wait++) {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (existing) return { value: existing, generated: false };
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
  throw new Error(`${file} is empty: delete it to generate a new secret`);
}

/** Where the CLI looks for the admin token when OUTDIAL_ADMIN_TOKEN is not set. */
export function readAdminTokenFile(dataDir: string): string | undefined {
  try {
    return fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
