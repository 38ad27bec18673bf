import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

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
    help: 'Calls handed to the telephony provider by this process (batch and single)',
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

  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'outdial_' });
  }
}
