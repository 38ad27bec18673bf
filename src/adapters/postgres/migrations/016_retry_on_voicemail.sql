-- Issue 24 §6: a batch contact whose call reached voicemail is not called again (the agent's
-- voicemailMessage would be left twice) unless the batch's retryStrategy.retryOnVoicemail says so.
-- Batches already stored take the new default: their next voicemail is final too.
ALTER TABLE batches ADD COLUMN retry_on_voicemail boolean NOT NULL DEFAULT false;
