/** Agents and model ports for conversation tests. */
import type { DialAgent } from '../../src/ports.js';

/** An English agent with these basicDetails. */
export function agentFor(details: Record<string, unknown>, language = 'en-US'): DialAgent {
  return { id: 'agt_test', name: 'Acme agent', agentName: 'Ana', language, sipTrunkId: null, details };
}
