/** Agents' HTTP tools for engine tests: the real signed caller, allowed to reach loopback. */
import { newWebhookSecret } from '../../src/services/users.js';
import { HttpToolCaller } from '../../src/voice/http-tools.js';
import { webhookDispatcher } from '../../src/webhooks/address-guard.js';

/** A caller signing with a fresh secret (`close` when the file is done). */
export function testHttpTools(timeoutMs: number): {
  secret: string;
  httpTools: HttpToolCaller;
  close(): Promise<void>;
} {
  const secret = newWebhookSecret();
  const dispatcher = webhookDispatcher({ allowPrivate: true });
  const httpTools = new HttpToolCaller({
    dispatcher,
    allowPrivate: true,
    signingSecrets: async () => [secret],
    timeoutMs,
  });
  return { secret, httpTools, close: () => dispatcher.close() };
}
