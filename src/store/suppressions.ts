/** A suppressions row. */
export interface SuppressionRow {
  phone_number: string;
  reason: string | null;
  source_call_id: string | null;
  created_at: Date;
}

/** A number to add to a user's list; `sourceCallId` names the call an opt-out was heard on. */
export interface NewSuppression {
  userId: string;
  phoneNumber: string;
  reason: string | null;
  sourceCallId: string | null;
  now: Date;
}

/** The per-user suppression list (issue 15). */
export interface SuppressionsRepo {
  /** Whether the number (E.164) is on the user's list. */
  has(userId: string, phoneNumber: string): Promise<boolean>;
  /** Which of these numbers are on the user's list, in one statement. */
  among(userId: string, phoneNumbers: string[]): Promise<string[]>;
  /** Adds the number unless it is on the list already: the new row, or undefined. */
  addIfAbsent(entry: NewSuppression): Promise<SuppressionRow | undefined>;
  get(userId: string, phoneNumber: string): Promise<SuppressionRow | undefined>;
  /**
   * The user's list, newest first then by number: `limit` rows after `after` (a row's creation
   * time in microseconds, as text, and its number) when given; each with its `micros`.
   */
  page(
    userId: string,
    after: { micros: string; phoneNumber: string } | null,
    limit: number,
  ): Promise<Array<SuppressionRow & { micros: string }>>;
  /** Removes the number: whether it was on the list. */
  remove(userId: string, phoneNumber: string): Promise<boolean>;
}
