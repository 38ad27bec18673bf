-- Campaign controls and compliance (issue 15). One migration for the whole issue, so every part
-- builds on the same schema.

-- A batch may be paused (no new call starts; calls up finish) and resumed to where it stopped.
-- `paused_at`: when it was paused, null otherwise.
ALTER TABLE batches DROP CONSTRAINT batches_status_check;
ALTER TABLE batches ADD CONSTRAINT batches_status_check
  CHECK (status IN ('ingesting', 'scheduled', 'pending', 'processing', 'paused', 'completed', 'cancelled', 'failed'));
ALTER TABLE batches ADD COLUMN paused_at timestamptz;

-- The calling window, evaluated in each contact's own zone: {start: "HH:MM", end: "HH:MM",
-- days: ["mon", ...] | null}; null: any time.
ALTER TABLE batches ADD COLUMN calling_window jsonb;
-- Contacts without a consent record are skipped (never dialed) when set.
ALTER TABLE batches ADD COLUMN require_consent boolean NOT NULL DEFAULT false;
-- Final counters beside processed/cancelled_jobs: contacts never dialed because their number is
-- on the user's suppression list, and because they had no consent record under requireConsent.
ALTER TABLE batches ADD COLUMN suppressed integer NOT NULL DEFAULT 0;
ALTER TABLE batches ADD COLUMN skipped integer NOT NULL DEFAULT 0;

-- Contact states: queued, dialing, done, cancelled as before; suppressed (the number is on the
-- suppression list: never dialed, or not again) and skipped (no consent under requireConsent).
ALTER TABLE batch_contacts DROP CONSTRAINT batch_contacts_state_check;
ALTER TABLE batch_contacts ADD CONSTRAINT batch_contacts_state_check
  CHECK (state IN ('queued', 'dialing', 'done', 'cancelled', 'suppressed', 'skipped'));
-- The IANA zone the calling window is read in for this contact: the contact's own `timezone`,
-- else its number's zone when its country or region has one, else the batch's timezone.
ALTER TABLE batch_contacts ADD COLUMN timezone text;
-- True while a queued contact waits for its calling window to open (next_attempt_at is then the
-- opening); cleared when it is claimed.
ALTER TABLE batch_contacts ADD COLUMN window_wait boolean NOT NULL DEFAULT false;
CREATE INDEX batch_contacts_window_wait_idx ON batch_contacts (batch_id) WHERE state = 'queued' AND window_wait;

-- A contact's consent record {source, obtainedAt, text?}, as the latest batch that gave one said.
ALTER TABLE contacts ADD COLUMN timezone text;
ALTER TABLE contacts ADD COLUMN consent jsonb;

-- Per-user suppression list (do not call). `source_call_id`: the call an opt-out was heard on.
CREATE TABLE suppressions (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  phone_number text NOT NULL,
  reason text,
  source_call_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, phone_number)
);
CREATE INDEX suppressions_user_idx ON suppressions (user_id, created_at DESC, phone_number);

-- Idempotency-Key records, per user. `state` running while the first request works; `done` with
-- the response to replay. `request_hash`: sha256 of method, path and body; `locked_until`: a
-- running record older than this belongs to a process that died. Kept 24 h.
CREATE TABLE idempotency_keys (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  key text NOT NULL,
  request_hash text NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'done')),
  locked_until timestamptz,
  response_status integer,
  response_body jsonb,
  resource_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
