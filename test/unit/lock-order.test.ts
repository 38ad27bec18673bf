import { describe, expect, it } from 'vitest';
import { LockOrder } from '../../src/adapters/postgres/repos/locks.js';

describe('LockOrder', () => {
  it('takes batches, users, contacts and calls in that order, each kind again as often as needed', () => {
    const order = new LockOrder();
    for (const kind of ['batches', 'batches', 'users', 'contacts', 'calls', 'calls'] as const)
      order.take(kind);
  });

  it('refuses a kind that comes before one already taken', () => {
    const order = new LockOrder();
    order.take('users');
    expect(() => order.take('batches')).toThrow(
      'Lock order: batches locked after users (the order is batches, users, contacts, calls)',
    );
  });
});
