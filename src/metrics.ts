import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { TurnMetrics } from './domain/agent-call.js';
import type { CallEndedEvent } from './ports.js';

/** Turn latency buckets, in seconds: 50 ms to 10 s, finest where voice agents aim (0.5-1.5 s). */
const TURN_BUCKETS = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.2, 1.5, 2, 3, 5, 10];

/**
 * The service's Prometheus metrics, one registry per runtime (so tests and benchmarks that build
 * several runtimes in one process never mix them). Served at `GET /metrics`.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'outdial_http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'outdial_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  readonly callsEnded = new Counter({
    name: 'outdial_calls_ended_total',
    help: 'Calls that ended, by final status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly callsDialed = new Counter({
    name: 'outdial_calls_dialed_total',
    help: 'Calls handed to the telephony provider (batch and single) or opened from a browser (web) by this process',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly sipFinalResponses = new Counter({
    name: 'outdial_sip_final_responses_total',
    help: "Carriers' final answers to our INVITEs, by trunk and SIP status code (503 and 429 are capacity answers, retried)",
    labelNames: ['trunk', 'code'] as const,
    registers: [this.registry],
  });
  readonly sipTrunkCalls = new Gauge({
    name: 'outdial_sip_trunk_calls',
    help: 'Calls of a SIP trunk in this process, by state (up: INVITE sent until hang-up; waiting: for the trunk caps)',
    labelNames: ['trunk', 'state'] as const,
    registers: [this.registry],
  });
  readonly dispatcherActive = new Gauge({
    name: 'outdial_dispatcher_active_calls',
    help: 'Calls this process has up now',
    registers: [this.registry],
  });
  readonly dispatcherClaimed = new Gauge({
    name: 'outdial_dispatcher_claimed_waiting',
    help: 'Calls claimed by this process that wait for their slot',
    registers: [this.registry],
  });
  readonly aiCallsInProgress = new Gauge({
    name: 'outdial_ai_calls_in_progress',
    help: 'Answered calls held by a conversation engine in this process now (bound: OUTDIAL_MAX_AI_CALLS)',
    registers: [this.registry],
  });
  readonly overloaded = new Gauge({
    name: 'outdial_overloaded',
    help: '1 while this process is past a load bound (AI calls at OUTDIAL_MAX_AI_CALLS, or event-loop lag past OUTDIAL_MAX_EVENT_LOOP_LAG_MS) and claims no more calls of that kind, else 0',
    registers: [this.registry],
  });
  readonly eventLoopLag = new Gauge({
    name: 'outdial_event_loop_lag_seconds',
    help: "This process's event-loop delay at p99 over the last 2 s window, as the dispatcher's load check reads it",
    registers: [this.registry],
  });
  readonly breakerState = new Gauge({
    name: 'outdial_breaker_state',
    help: "Each dependency's circuit breaker (a model endpoint, a SIP trunk), shared by the deployment: 0 closed, 1 half-open (a probe in flight), 2 open (no new call that needs it is placed); sampled at scrape time",
    labelNames: ['dependency', 'kind'] as const,
    registers: [this.registry],
  });
  readonly breakerTransitions = new Counter({
    name: 'outdial_breaker_transitions_total',
    help: 'Circuit breaker changes this process made, by dependency and the state it went to (open, half-open, closed)',
    labelNames: ['dependency', 'kind', 'to'] as const,
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'outdial_dispatch_queue_depth',
    help: 'Batch contacts queued and due now, across all active batches (sampled at scrape time)',
    registers: [this.registry],
  });
  readonly webhookDeliveries = new Counter({
    name: 'outdial_webhook_attempts_total',
    help: 'Webhook delivery attempts, by result (delivered, retry, failed)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly analysisDuration = new Histogram({
    name: 'outdial_analysis_duration_seconds',
    help: 'Time to analyse a call, by analyzer',
    labelNames: ['analyzer'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly agentEndedReasons = new Counter({
    name: 'outdial_agent_calls_ended_total',
    help: 'Answered AI agent calls, by endedReason, counted by the process that recorded their end',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  /** One histogram per turn figure, observed when a call's end is recorded. */
  readonly agentTurns: Record<keyof TurnMetrics, Histogram> = {
    voiceToVoiceMs: this.turnHistogram(
      'outdial_agent_voice_to_voice_seconds',
      "End of the callee's speech on the wire to the agent's first audio packet, per turn",
    ),
    endpointingMs: this.turnHistogram(
      'outdial_agent_endpointing_seconds',
      "End of the callee's speech to the end-of-turn decision, per turn",
    ),
    sttMs: this.turnHistogram('outdial_agent_stt_seconds', 'Speech-to-text time, per turn'),
    llmFirstTokenMs: this.turnHistogram(
      'outdial_agent_llm_first_token_seconds',
      "Chat request sent to the model's first token, per turn",
    ),
    ttsFirstByteMs: this.turnHistogram(
      'outdial_agent_tts_first_byte_seconds',
      'First sentence sent to text-to-speech to its first audio byte, per turn',
    ),
  };

  constructor(options: { processMetrics?: boolean } = {}) {
    if (!options.processMetrics) return;
    collectDefaultMetrics({ register: this.registry, prefix: 'outdial_' });
    // prom-client also reports the number of libuv handles, requests and resources as gauges named
    // `..._total`, a suffix Prometheus keeps for counters (promtool check metrics flags all three).
    // Each is the sum of the gauge of the same name without `_total`, which counts them by type, so
    // they are dropped: `sum(outdial_nodejs_active_handles)` gives the same figure.
    for (const family of ['handles', 'requests', 'resources']) {
      this.registry.removeSingleMetric(`outdial_nodejs_active_${family}_total`);
    }
  }

  private turnHistogram(name: string, help: string): Histogram {
    return new Histogram({ name, help, buckets: TURN_BUCKETS, registers: [this.registry] });
  }

  /** Counts an AI call's ended reason and observes its turns (called once per recorded end). */
  observeAgentCall(event: Pick<CallEndedEvent, 'endedReason' | 'turns'>): void {
    if (event.endedReason) this.agentEndedReasons.inc({ reason: event.endedReason });
    for (const turn of event.turns ?? []) {
      for (const [figure, histogram] of Object.entries(this.agentTurns)) {
        const ms = turn[figure as keyof TurnMetrics];
        if (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0) histogram.observe(ms / 1000);
      }
    }
  }
}
