import type { App, AppServices } from '../route-kit.js';
import { registerAdminAgents } from './admin/agents.js';
import { registerAdminKeys } from './admin/keys.js';
import { registerAdminSipTrunks } from './admin/sip-trunks.js';
import { registerAdminUsers } from './admin/users.js';
import { registerAccountGet } from './v1/account.get.js';
import { registerAgentGet } from './v1/agent.get.js';
import { registerBatchCancel } from './v1/batch.cancel.js';
import { registerBatchCheckStatus } from './v1/batch.check-status.get.js';
import { registerBatchCreate } from './v1/batch.create.js';
import { registerBatchExport } from './v1/batch.export.get.js';
import { registerBatchList } from './v1/batch.list.get.js';
import { registerBatchPause } from './v1/batch.pause.js';
import { registerBatchPreflight } from './v1/batch.preflight.js';
import { registerCallAnalysis } from './v1/call.analysis.js';
import { registerCallCheckStatus } from './v1/call.check-status.get.js';
import { registerCallDial } from './v1/call.dial.js';
import { registerCallEvents } from './v1/call.events.get.js';
import { registerCallHangup } from './v1/call.hangup.js';
import { registerCallList } from './v1/call.list.get.js';
import { registerCallRecording } from './v1/call.recording.get.js';
import { registerCallSay } from './v1/call.say.js';
import { registerCallTransfer } from './v1/call.transfer.js';
import { registerHealthGet } from './v1/health.get.js';
import { registerStatusBatch } from './v1/status.batch.get.js';
import { registerStatusCall } from './v1/status.call.get.js';
import { registerSuppressionCreate } from './v1/suppressions.create.js';
import { registerSuppressionDelete } from './v1/suppressions.delete.js';
import { registerSuppressionList } from './v1/suppressions.list.get.js';
import { registerWebhookDeliveries } from './v1/webhooks.deliveries.js';

/** Every /api/v1 endpoint, one file each; the caller has put the API key check in front of them. */
export function registerApiRoutes(app: App, services: AppServices): void {
  registerAgentGet(app, services);
  registerCallDial(app, services);
  registerStatusCall(app, services);
  registerCallCheckStatus(app, services);
  registerCallList(app, services);
  registerHealthGet(app, services);
  registerCallRecording(app, services);
  registerBatchCheckStatus(app, services);
  registerStatusBatch(app, services);
  registerBatchList(app, services);
  registerBatchCancel(app, services);
  registerBatchPause(app, services);
  registerBatchExport(app, services);
  registerWebhookDeliveries(app, services);
  registerCallAnalysis(app, services);
  registerBatchCreate(app, services);
  registerAccountGet(app, services);
  registerSuppressionCreate(app, services);
  registerSuppressionList(app, services);
  registerSuppressionDelete(app, services);
  registerBatchPreflight(app, services);
  registerCallHangup(app, services);
  registerCallTransfer(app, services);
  registerCallSay(app, services);
  registerCallEvents(app, services);
}

/** The admin interface (/admin/v1); the caller has put the admin token check in front of it. */
export function registerAdminRoutes(app: App, services: AppServices): void {
  registerAdminUsers(app, services);
  registerAdminAgents(app, services);
  registerAdminKeys(app, services);
  registerAdminSipTrunks(app, services);
}
