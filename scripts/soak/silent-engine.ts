import type { ConversationEngine } from '../../src/voice/contracts.js';

/**
 * The soak's conversation engine (OUTDIAL_CONVERSATION_ENGINE): says nothing and holds the call
 * until the far end hangs up. The soak measures signalling and accounting; the scripted speech
 * engine would spend this shared 2-core machine's CPU on espeak-ng and pocketsphinx for up to 30
 * answered calls at once, and slow every process the soak kills and restarts.
 */
const silent: ConversationEngine = {
  name: 'silent',
  converse: (session) =>
    new Promise<void>((resolve) => {
      if (session.signal.aborted) resolve();
      else session.signal.addEventListener('abort', () => resolve(), { once: true });
    }),
};

export default silent;
