/** The batches' contact queue, as far as the code converted so far reads it (issue 23 moves the rest). */
export interface BatchContactsRepo {
  /** Queued contacts due now, of batches in one of these statuses (the queue-depth gauge). */
  dueCount(batchStatuses: readonly string[]): Promise<number>;
}
