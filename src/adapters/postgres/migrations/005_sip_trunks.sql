-- A user's SIP trunks: where an agent with a sipTrunkId sends its calls. The password is stored
-- encrypted (AES-256-GCM under a key derived from the JWT secret) and never returned by the API.
CREATE TABLE sip_trunks (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  host text NOT NULL,
  port integer NOT NULL DEFAULT 5060 CHECK (port BETWEEN 1 AND 65535),
  transport text NOT NULL DEFAULT 'udp' CHECK (transport IN ('udp')),
  username text,
  password_encrypted text,
  from_number text NOT NULL,
  max_calls_per_second integer CHECK (max_calls_per_second BETWEEN 1 AND 1000),
  max_concurrent_calls integer CHECK (max_concurrent_calls BETWEEN 1 AND 100000),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sip_trunks_user_idx ON sip_trunks (user_id, created_at DESC, id DESC);
