/** The calls table, as far as the services converted so far read it (issue 23 moves the rest). */
export interface CallsRepo {
  /** The call's user. */
  ownerOf(callId: string): Promise<string | undefined>;
}
