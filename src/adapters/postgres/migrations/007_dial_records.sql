-- Dial records in the shared database (issue 13): what decides whether a call was placed lives
-- where every worker, on any host, reads it, never on a local disk.

-- One row per running process (API or worker): its lease, renewed every few seconds. A call is
-- alive while the owner named on its dial record holds an unexpired lease.
CREATE TABLE dial_owners (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  started_at timestamptz NOT NULL,
  -- The last renewal: the heartbeat a cut-off call's duration runs up to.
  renewed_at timestamptz NOT NULL,
  lease_until timestamptz NOT NULL
);

-- One row per call id, written with the call (state 'waiting') and moved to 'sent' just before
-- the provider reaches the network: a call id goes out at most once, across processes and hosts.
CREATE TABLE dials (
  call_id text PRIMARY KEY,
  owner text NOT NULL,
  provider text NOT NULL,
  state text NOT NULL CHECK (state IN ('waiting', 'sent', 'ended', 'returned')),
  created_at timestamptz NOT NULL,
  sent_at timestamptz,
  answered_at timestamptz,
  ended_at timestamptz,
  -- The provider's end report (status, duration, error, sip code, transcription) once it ended.
  outcome jsonb
);
CREATE INDEX dials_owner_idx ON dials (owner) WHERE state <> 'ended';
CREATE INDEX dials_created_idx ON dials (created_at);
