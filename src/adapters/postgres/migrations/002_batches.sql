-- A campaign. Counters (ingested, processed, succeeded, failed) are kept on the row by the same
-- transactions that change a contact's state, so statistics never scan 100,000 rows.
CREATE TABLE batches (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  agent_id text NOT NULL REFERENCES agents (id),
  name text NOT NULL DEFAULT 'Unknown',
  status text NOT NULL CHECK (status IN ('ingesting', 'scheduled', 'pending', 'processing', 'completed', 'cancelled', 'failed')),
  priority integer NOT NULL CHECK (priority BETWEEN 1 AND 10),
  max_calls_per_second integer NOT NULL CHECK (max_calls_per_second BETWEEN 1 AND 30),
  max_attempts integer NOT NULL CHECK (max_attempts BETWEEN 1 AND 5),
  no_answer_delay_ms bigint NOT NULL,
  busy_delay_ms bigint NOT NULL,
  timezone text NOT NULL DEFAULT 'UTC',
  scheduled_start_at timestamptz,
  tags text[] NOT NULL DEFAULT '{}',
  webhooks jsonb,
  submitted integer NOT NULL,
  total integer NOT NULL,
  duplicates integer NOT NULL DEFAULT 0,
  ingested integer NOT NULL DEFAULT 0,
  processed integer NOT NULL DEFAULT 0,
  succeeded integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  cancelled_jobs integer NOT NULL DEFAULT 0,
  error text,
  error_code text,
  ingest_lease_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  completed_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batches_user_idx ON batches (user_id, created_at DESC, id DESC);
CREATE INDEX batches_active_idx ON batches (priority DESC, created_at) WHERE status IN ('scheduled', 'pending', 'processing');
CREATE INDEX batches_ingesting_idx ON batches (ingest_lease_until) WHERE status = 'ingesting';
CREATE INDEX batches_tags_idx ON batches USING gin (tags);

-- The request as received, written in the transaction that creates the batch and before the 202:
-- if the process dies while ingesting, another one ingests again from here. Deleted once ingested.
CREATE TABLE batch_payloads (
  batch_id text PRIMARY KEY REFERENCES batches (id) ON DELETE CASCADE,
  body text NOT NULL
);
-- Stored out of line but not compressed: compressing 16 MB before the 202 costs more than the disk it saves.
ALTER TABLE batch_payloads ALTER COLUMN body SET STORAGE EXTERNAL;

-- One row per distinct contact of a batch: its dial state. `call_id` is the current or last
-- attempt's call, written in the same transaction that claims the row (the dial intent).
-- No foreign keys here: rows are only written by ingestion, from the batch it holds locked and the
-- contacts it upserted in the same transaction, and a per-row key check (which also share-locks
-- the batch and contact rows) halved the ingestion rate of a 100,000-contact batch.
CREATE TABLE batch_contacts (
  batch_id text NOT NULL,
  seq integer NOT NULL,
  contact_id text NOT NULL,
  phone_number text NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'dialing', 'done', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  lease_until timestamptz,
  call_id text,
  outcome text,
  PRIMARY KEY (batch_id, seq)
);
CREATE INDEX batch_contacts_due_idx ON batch_contacts (batch_id, next_attempt_at, seq) WHERE state = 'queued';
CREATE INDEX batch_contacts_leased_idx ON batch_contacts (lease_until) WHERE state = 'dialing';

ALTER TABLE calls ADD CONSTRAINT calls_batch_fk FOREIGN KEY (batch_id) REFERENCES batches (id) ON DELETE CASCADE;
-- The batch row a call is an attempt of: (batch_id, batch_seq) is batch_contacts' key.
ALTER TABLE calls ADD COLUMN batch_seq integer;
