-- Users own everything else. Minutes are whole minutes: calls are charged by started minute.
CREATE TABLE users (
  id text PRIMARY KEY,
  name text NOT NULL,
  email text,
  available_minutes integer NOT NULL DEFAULT 0,
  webhook_secret text NOT NULL,
  previous_webhook_secret text,
  webhook_secret_rotated_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- An API key is a JWT whose jti is this row's id; the token itself is never stored.
CREATE TABLE api_keys (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz
);
CREATE INDEX api_keys_user_idx ON api_keys (user_id, created_at DESC);

CREATE TABLE agents (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  type text NOT NULL DEFAULT 'OUTBOUND' CHECK (type IN ('OUTBOUND', 'INBOUND')),
  is_active boolean NOT NULL DEFAULT true,
  basic_details jsonb NOT NULL DEFAULT '{}'::jsonb,
  metric_config jsonb NOT NULL DEFAULT '{"enabled": false, "customMetrics": []}'::jsonb,
  sip_trunk_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_user_idx ON agents (user_id, created_at DESC);

-- One contact per user and phone number: dials and batches update it rather than duplicate it.
-- user_id has no foreign key: contacts are only written for an authenticated user, up to 100,000
-- in one statement, and a per-row key check (a share lock on the user row each time) costs a
-- quarter of the ingestion rate.
CREATE TABLE contacts (
  id text PRIMARY KEY,
  user_id text NOT NULL,
  phone_number text NOT NULL,
  name text NOT NULL DEFAULT 'Unknown',
  email text,
  company text,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (user_id, phone_number)
);

-- A call row is written (status ONGOING) before the provider is asked to dial: it is the dial
-- intent, and its id is the provider's idempotency key.
CREATE TABLE calls (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  agent_id text NOT NULL REFERENCES agents (id),
  contact_id text NOT NULL REFERENCES contacts (id),
  batch_id text,
  status text NOT NULL CHECK (status IN ('ONGOING', 'COMPLETED', 'NO_ANSWER', 'BUSY', 'FAILED', 'VOICEMAIL')),
  direction text NOT NULL DEFAULT 'OUTBOUND',
  phone_number text NOT NULL,
  -- 1 for the first call to this contact, 2 for the next: the simulator's outcome depends on it.
  attempt integer NOT NULL DEFAULT 1,
  provider text NOT NULL,
  error text,
  duration integer,
  minutes_charged integer NOT NULL DEFAULT 0,
  transcription jsonb,
  summary text,
  metric_json jsonb,
  status_callback_url text,
  created_at timestamptz NOT NULL DEFAULT now(),
  answered_at timestamptz,
  ended_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX calls_user_idx ON calls (user_id, created_at DESC);
CREATE INDEX calls_batch_idx ON calls (batch_id, created_at DESC) WHERE batch_id IS NOT NULL;
-- At most one call in progress per contact: the database settles two concurrent dials.
CREATE UNIQUE INDEX calls_one_ongoing_per_contact ON calls (contact_id) WHERE status = 'ONGOING';
CREATE INDEX calls_contact_idx ON calls (contact_id, created_at);
CREATE INDEX calls_ongoing_idx ON calls (created_at) WHERE status = 'ONGOING';
