export interface ApiKeyRow {
  id: string;
  user_id: string;
  name: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

export interface KeysRepo {
  insert(key: { id: string; user_id: string; name: string; expires_at: Date | null }): Promise<ApiKeyRow>;
  /** A user's keys, newest first. */
  listForUser(userId: string): Promise<ApiKeyRow[]>;
  /** Sets revoked_at unless it is set already; undefined when there is no such key (of that user). */
  revoke(keyId: string, userId: string | undefined, now: Date): Promise<ApiKeyRow | undefined>;
  /** Notes the key as used at `now` and answers what decides whether it still works. */
  touch(
    keyId: string,
    now: Date,
  ): Promise<Pick<ApiKeyRow, 'user_id' | 'expires_at' | 'revoked_at'> | undefined>;
}
