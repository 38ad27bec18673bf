-- What an AI agent's call carries besides its transcript (issue 14):
--   variables:   the dial body's `variables` (values for the agent's {{variables}}), null when none;
--   ended_reason: why an answered call ended (agent-ended, callee-hung-up, silence-timeout,
--                 max-duration, transferred, voicemail, error), null when nobody answered;
--   turns:       per agent turn latencies in ms (endpointingMs, sttMs, llmFirstTokenMs,
--                ttsFirstByteMs, voiceToVoiceMs), null until the call ends;
--   tool_calls:  the tools the model called, in order, null until the call ends.
ALTER TABLE calls ADD COLUMN variables jsonb;
ALTER TABLE calls ADD COLUMN ended_reason text;
ALTER TABLE calls ADD COLUMN turns jsonb;
ALTER TABLE calls ADD COLUMN tool_calls jsonb;
