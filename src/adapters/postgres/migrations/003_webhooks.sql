-- The webhook outbox: one row per event and receiving URL, written in the same transaction as the
-- state change that causes it (a call's end, a batch's completion or failure), so a crash between
-- the change and the send still delivers. `id` is the Standard Webhooks `webhook-id`: stable across
-- retries and manual replays, so receivers can deduplicate on it. `body` holds the exact bytes sent.
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  event text NOT NULL,
  url text NOT NULL,
  body text NOT NULL,
  batch_id text,
  call_id text,
  status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  -- Attempts started, counted when an attempt is claimed (a crash mid-send still counts it).
  attempts integer NOT NULL DEFAULT 0,
  -- When the row is next due. A claim moves it past the attempt's timeout: that is the lease, and
  -- a worker that dies mid-send leaves a row that simply falls due again.
  next_attempt_at timestamptz NOT NULL,
  last_status integer,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_user_idx ON webhook_deliveries (user_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_batch_idx ON webhook_deliveries (batch_id) WHERE batch_id IS NOT NULL;
CREATE INDEX webhook_deliveries_call_idx ON webhook_deliveries (call_id) WHERE call_id IS NOT NULL;
