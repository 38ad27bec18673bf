-- Dashboard sessions on the server, so that signing out ends a session everywhere: before, the
-- cookie was a self-contained signed token that a copy kept valid for its 12 hours. The cookie now
-- holds a random token; only its SHA-256 is stored, so a database dump cannot sign anyone in.
-- A session belongs to the API key it was made with: revoking the key (checked on every request)
-- ends it, and deleting the key or the user deletes it.
CREATE TABLE dashboard_sessions (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  key_id text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_expires_idx ON dashboard_sessions (expires_at);
