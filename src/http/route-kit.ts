import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import { AppError } from '../domain/errors.js';
import type { Metrics } from '../metrics.js';
import type { WebCalls } from '../ports.js';
import type { AgentService } from '../services/agents.js';
import type { AnalysisService } from '../services/analysis.js';
import type { BatchReads } from '../services/batch-reads.js';
import type { BatchService } from '../services/batches.js';
import type { CallIntake } from '../services/calls/intake.js';
import type { CallReads } from '../services/calls/reads.js';
import type { CallRecordings } from '../services/calls/recordings.js';
import type { DashboardReads } from '../services/dashboard.js';
import type { BatchExport } from '../services/export.js';
import type { HealthService } from '../services/health.js';
import type { IdempotencyService } from '../services/idempotency.js';
import type { KeyService } from '../services/keys.js';
import type { LiveControlService } from '../services/live-control.js';
import type { BatchPreflight } from '../services/preflight.js';
import type { SipTrunkService } from '../services/sip-trunks.js';
import type { SuppressionService } from '../services/suppressions.js';
import type { UserService } from '../services/users.js';
import type { WebhookService } from '../services/webhooks.js';

// What a route file needs from the app, kept apart from app.ts so that app.ts imports the routes
// and no route imports app.ts.

export interface AppServices {
  keys: KeyService;
  users: UserService;
  agents: AgentService;
  calls: CallIntake;
  callReads: CallReads;
  recordings: CallRecordings;
  health: HealthService;
  batches: BatchService;
  batchReads: BatchReads;
  dashboard: DashboardReads;
  batchExport: BatchExport;
  sipTrunks: SipTrunkService;
  webhooks: WebhookService;
  analysis: AnalysisService;
  suppressions: SuppressionService;
  preflight: BatchPreflight;
  idempotency: IdempotencyService;
  live: LiveControlService;
  webCalls: WebCalls;
}

export interface BuildAppOptions {
  services: AppServices;
  /** Signs dashboard sessions (derived key) like it signs API keys. */
  jwtSecret: string;
  /** Session cookies get the Secure flag (the public URL is https). */
  secureCookies: boolean;
  metrics: Metrics;
  /** Client addresses allowed to read /metrics without the admin token. */
  metricsAllow: string[];
  /** Refreshes the gauges sampled at scrape time. */
  sampleGauges: () => Promise<void>;
  adminToken: string;
  logger: FastifyBaseLogger;
  /**
   * One info line a request, `GET /api/v1/calls 200 4.2 ms`, when it is answered (LOG_FORMAT=pretty),
   * instead of the JSON record "request completed" (`JsonRequestLog`).
   */
  conciseRequestLog?: boolean;
  version: string;
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** A `userId` given in a body or query must be the key's own user. */
export function assertOwnUser(authUserId: string, given: string | undefined): void {
  if (given !== undefined && given !== authUserId) throw new AppError('FORBIDDEN');
}
