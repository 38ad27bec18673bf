-- Post-call analysis as durable work on the call row: a call that ends with a transcription is
-- marked pending in the same transaction, and analysis workers claim it (FOR UPDATE SKIP LOCKED,
-- the due time moved past the work as a lease), so a restart never loses one. The call's
-- onCallComplete / statusCallBackUrl webhook is queued when its analysis is stored, so it carries
-- the summary and metricJson.
ALTER TABLE calls ADD COLUMN analysis_status text CHECK (analysis_status IN ('pending', 'done', 'failed'));
ALTER TABLE calls ADD COLUMN analysis_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE calls ADD COLUMN analysis_due_at timestamptz;
ALTER TABLE calls ADD COLUMN analyzer text;
CREATE INDEX calls_analysis_due_idx ON calls (analysis_due_at) WHERE analysis_status = 'pending';
