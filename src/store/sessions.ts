/** Dashboard sessions: the id is the SHA-256 (hex) of the cookie's token. */
export interface SessionsRepo {
  insert(session: {
    id: string;
    user_id: string;
    key_id: string;
    created_at: Date;
    expires_at: Date;
  }): Promise<void>;
  deleteExpired(now: Date): Promise<void>;
  /** The session's user and key while it has not expired. */
  active(id: string, now: Date): Promise<{ user_id: string; key_id: string } | undefined>;
  delete(id: string): Promise<void>;
}
