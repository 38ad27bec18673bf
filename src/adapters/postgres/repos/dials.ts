import type { DialsRepo } from '../../../store/dials.js';
import type { Db } from '../database.js';
import { openAnsweredDial, openDials, returnDial } from '../dial-records.js';

/** The dial records' writes a call's lifecycle makes in its transactions (`dial-records.ts` holds their SQL). */
export class PgDialsRepo implements DialsRepo {
  constructor(private readonly db: Db) {}

  open(owner: string, calls: Array<{ callId: string; provider: string }>, at: Date): Promise<void> {
    return openDials(this.db, owner, calls, at);
  }

  openAnswered(owner: string, call: { callId: string; provider: string }, at: Date): Promise<void> {
    return openAnsweredDial(this.db, owner, call, at);
  }

  returnDial(callId: string, owner: string | null): Promise<boolean> {
    return returnDial(this.db, callId, owner);
  }
}
