export interface SipTrunkRow {
  id: string;
  user_id: string;
  name: string;
  host: string;
  port: number;
  transport: 'udp';
  username: string | null;
  /** Sealed (src/services/sealing.ts). */
  password_encrypted: string | null;
  from_number: string;
  max_calls_per_second: number | null;
  max_concurrent_calls: number | null;
  created_at: Date;
  updated_at: Date;
}

export type SipTrunkFields = Omit<SipTrunkRow, 'id' | 'user_id' | 'created_at' | 'updated_at'>;

export interface SipTrunksRepo {
  insert(trunk: SipTrunkFields & { id: string; user_id: string }): Promise<SipTrunkRow>;
  get(trunkId: string): Promise<SipTrunkRow | undefined>;
  existsForUser(trunkId: string, userId: string): Promise<boolean>;
  /** A user's trunks, newest first. */
  listForUser(userId: string): Promise<SipTrunkRow[]>;
  /** Every user's trunks that an active agent dials through, by id (what `outdial doctor` pings). */
  listInUse(): Promise<SipTrunkRow[]>;
  update(trunkId: string, fields: Partial<SipTrunkFields>, now: Date): Promise<SipTrunkRow | undefined>;
  /** Locks the trunk's row (in a transaction): false when there is none. */
  lockForDelete(trunkId: string): Promise<boolean>;
  delete(trunkId: string): Promise<void>;
}
