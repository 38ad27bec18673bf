/** The columns that hold sealed secrets, read and rewritten by the re-seal (src/services/sealing.ts). */
export interface SealedColumnsRepo {
  /**
   * Up to `limit` rows, by id after `after`, whose `column` is set and does not start with
   * `sealedPrefix` (the values not yet under the current key).
   */
  notSealedWith(
    table: string,
    column: string,
    sealedPrefix: string,
    after: string,
    limit: number,
  ): Promise<Array<{ id: string; value: string }>>;
  /** Writes `to` where the column still holds `from`: the number of rows changed (0 or 1). */
  replace(table: string, column: string, id: string, from: string, to: string): Promise<number>;
}
