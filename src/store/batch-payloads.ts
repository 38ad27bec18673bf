/** A batch's request body, kept until its contacts are ingested (recovery re-parses it). */
export interface BatchPayloadsRepo {
  insert(batchId: string, body: string): Promise<void>;
  body(batchId: string): Promise<string | undefined>;
  delete(batchId: string): Promise<void>;
}
