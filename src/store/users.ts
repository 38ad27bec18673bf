/** A users row as stored: the webhook secrets are sealed (or, in a database from before sealing, clear). */
export interface UserRow {
  id: string;
  name: string;
  email: string | null;
  available_minutes: number;
  max_concurrent_calls: number;
  /** ISO 3166-1 alpha-2: the country this user's numbers without + are read in; null: the server's. */
  default_country: string | null;
  webhook_secret: string;
  previous_webhook_secret: string | null;
  webhook_secret_rotated_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The stored secret columns of a user, sealed (or, in a database from before sealing, clear). */
export type StoredWebhookSecrets = Pick<
  UserRow,
  'webhook_secret' | 'previous_webhook_secret' | 'webhook_secret_rotated_at'
>;

export interface NewUser {
  id: string;
  name: string;
  email: string | null;
  available_minutes: number;
  /** Unset: the column's default. */
  max_concurrent_calls?: number;
  /** Unset: null (the server's OUTDIAL_DEFAULT_COUNTRY). */
  default_country?: string | null;
  webhook_secret: string;
}

export interface UsersRepo {
  insert(user: NewUser): Promise<UserRow>;
  get(userId: string): Promise<UserRow | undefined>;
  exists(userId: string): Promise<boolean>;
  availableMinutes(userId: string): Promise<number | undefined>;
  /** Whether the database has any user at all. */
  hasAny(): Promise<boolean>;
  /** Newest first: `limit` rows with an id below `before` (when given). */
  list(limit: number, before?: string): Promise<UserRow[]>;
  /** Sets the fields given and updated_at; undefined when there is no such user. */
  update(
    userId: string,
    fields: {
      name?: string;
      email?: string | null;
      max_concurrent_calls?: number;
      default_country?: string | null;
    },
    now: Date,
  ): Promise<UserRow | undefined>;
  /** Adds minutes (or takes them back) in one atomic update: the new balance, or undefined. */
  addMinutes(userId: string, minutes: number, now: Date): Promise<number | undefined>;
  webhookSecrets(userId: string): Promise<StoredWebhookSecrets | undefined>;
  /** The secrets of each of these users that exists. */
  webhookSecretsOf(userIds: string[]): Promise<Array<StoredWebhookSecrets & { id: string }>>;
  /** The current secret becomes the previous one, as sealed; false when there is no such user. */
  rotateWebhookSecret(userId: string, sealedSecret: string, now: Date): Promise<boolean>;
  /**
   * The user's balance, limit and calls in progress, in one statement and without a lock (an
   * estimate); undefined when there is no such user.
   */
  loadEstimate(
    userId: string,
  ): Promise<{ available_minutes: number; max_concurrent_calls: number; ongoing: number } | undefined>;
  /** Locks the user's row (in a transaction: LOCK_ORDER) and reads its balance and limit. */
  lockLoad(userId: string): Promise<{ available_minutes: number; max_concurrent_calls: number } | undefined>;
  /** The user's calls in progress, counted from the calls table. */
  ongoingCalls(userId: string): Promise<number>;
  /** Locks the users of these calls, in id order (LOCK_ORDER: after their batches). */
  lockOfCalls(callIds: string[]): Promise<void>;
  /** Takes minutes from each user's balance, in one statement. */
  charge(charges: Array<{ userId: string; minutes: number }>): Promise<void>;
}
