import { describe, expect, it } from 'vitest';
import {
  BATCH_CONTACT_STATES,
  BATCH_STATUSES,
  type BatchContactState,
  type BatchStatus,
} from '../../src/domain/batch.js';
import {
  ACTIVE_BATCH_STATUSES,
  allContactsFinal,
  type BatchEvent,
  batchSources,
  batchTransition,
  type ContactEvent,
  canBatch,
  contactSources,
  contactTransition,
  FINAL_BATCH_STATUSES,
  FINAL_CONTACT_STATES,
  IllegalTransition,
  initialContactState,
  isActiveBatch,
  isFinalBatch,
} from '../../src/domain/batch-lifecycle.js';

/** Every batch event with the status it leads to from each status it may leave; absent: illegal. */
const BATCH_TABLE: Array<{ event: BatchEvent; moves: Partial<Record<BatchStatus, BatchStatus>> }> = [
  { event: { type: 'ingested', startsLater: false }, moves: { ingesting: 'pending' } },
  { event: { type: 'ingested', startsLater: true }, moves: { ingesting: 'scheduled' } },
  {
    event: { type: 'claim' },
    moves: { scheduled: 'processing', pending: 'processing', processing: 'processing' },
  },
  { event: { type: 'pause' }, moves: { scheduled: 'paused', pending: 'paused', processing: 'paused' } },
  { event: { type: 'resume', started: true, startsLater: false }, moves: { paused: 'processing' } },
  { event: { type: 'resume', started: true, startsLater: true }, moves: { paused: 'processing' } },
  { event: { type: 'resume', started: false, startsLater: false }, moves: { paused: 'pending' } },
  { event: { type: 'resume', started: false, startsLater: true }, moves: { paused: 'scheduled' } },
  {
    event: { type: 'finish' },
    moves: { scheduled: 'completed', pending: 'completed', processing: 'completed', paused: 'completed' },
  },
  {
    event: { type: 'cancel' },
    moves: {
      ingesting: 'cancelled',
      scheduled: 'cancelled',
      pending: 'cancelled',
      processing: 'cancelled',
      paused: 'cancelled',
    },
  },
  {
    event: { type: 'fail' },
    moves: {
      ingesting: 'failed',
      scheduled: 'failed',
      pending: 'failed',
      processing: 'failed',
      paused: 'failed',
    },
  },
];

describe('batch transitions', () => {
  for (const { event, moves } of BATCH_TABLE) {
    for (const from of BATCH_STATUSES) {
      const to = moves[from];
      const label = `${JSON.stringify(event)} from ${from}`;
      if (to) {
        it(`${label} -> ${to}`, () => {
          expect(batchTransition(from, event)).toBe(to);
          expect(canBatch(from, event.type)).toBe(true);
          expect(batchSources(event.type)).toContain(from);
        });
      } else {
        it(`${label} is refused`, () => {
          expect(() => batchTransition(from, event)).toThrow(IllegalTransition);
          expect(canBatch(from, event.type)).toBe(false);
          expect(batchSources(event.type)).not.toContain(from);
        });
      }
    }
  }

  it('never leaves a final status, and names the move it refuses', () => {
    for (const from of FINAL_BATCH_STATUSES)
      for (const { event } of BATCH_TABLE) expect(canBatch(from, event.type)).toBe(false);
    expect(() => batchTransition('completed', { type: 'pause' })).toThrow(
      'illegal transition: pause from completed',
    );
  });

  it('keeps one list of active and final statuses', () => {
    expect(ACTIVE_BATCH_STATUSES).toEqual(['scheduled', 'pending', 'processing']);
    expect(BATCH_STATUSES.filter(isActiveBatch)).toEqual(['scheduled', 'pending', 'processing']);
    expect(BATCH_STATUSES.filter(isFinalBatch)).toEqual(['completed', 'cancelled', 'failed']);
    // paused and ingesting are neither: they dial nothing but are not over.
    expect(isActiveBatch('paused') || isFinalBatch('paused')).toBe(false);
    expect(isActiveBatch('ingesting') || isFinalBatch('ingesting')).toBe(false);
  });
});

const CONTACT_TABLE: Record<ContactEvent, Partial<Record<BatchContactState, BatchContactState>>> = {
  claim: { queued: 'dialing' },
  defer: { queued: 'queued' },
  suppress: { queued: 'suppressed' },
  cancel: { queued: 'cancelled' },
  return: { dialing: 'queued' },
  retry: { dialing: 'queued' },
  end: { dialing: 'done' },
};

describe('batch contact transitions', () => {
  for (const [event, moves] of Object.entries(CONTACT_TABLE) as Array<
    [ContactEvent, Partial<Record<BatchContactState, BatchContactState>>]
  >) {
    for (const from of BATCH_CONTACT_STATES) {
      const to = moves[from];
      if (to) {
        it(`${event} from ${from} -> ${to}`, () => {
          expect(contactTransition(from, event)).toBe(to);
          expect(contactSources(event)).toContain(from);
        });
      } else {
        it(`${event} from ${from} is refused`, () => {
          expect(() => contactTransition(from, event)).toThrow(IllegalTransition);
          expect(contactSources(event)).not.toContain(from);
        });
      }
    }
  }

  it('never moves a final contact', () => {
    expect(FINAL_CONTACT_STATES).toEqual(['done', 'cancelled', 'suppressed', 'skipped']);
    for (const from of FINAL_CONTACT_STATES)
      for (const event of Object.keys(CONTACT_TABLE) as ContactEvent[])
        expect(() => contactTransition(from, event)).toThrow(IllegalTransition);
  });

  it('queues a contact, or skips it when consent is required and missing', () => {
    expect(initialContactState(false, false)).toBe('queued');
    expect(initialContactState(false, true)).toBe('queued');
    expect(initialContactState(true, true)).toBe('queued');
    expect(initialContactState(true, false)).toBe('skipped');
  });

  it('counts a batch finished when done, cancelled, suppressed and skipped contacts make its total', () => {
    const base = { total: 10, processed: 4, cancelledJobs: 0, suppressed: 3, skipped: 2 };
    expect(allContactsFinal(base)).toBe(false);
    expect(allContactsFinal({ ...base, skipped: 3 })).toBe(true);
    expect(allContactsFinal({ ...base, processed: 0, suppressed: 0, skipped: 0, cancelledJobs: 10 })).toBe(
      true,
    );
    expect(allContactsFinal({ total: 0, processed: 0, cancelledJobs: 0, suppressed: 0, skipped: 0 })).toBe(
      true,
    );
  });
});
