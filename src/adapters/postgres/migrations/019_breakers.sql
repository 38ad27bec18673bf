-- Issue 24 §3: one circuit breaker per dependency (each model endpoint, each SIP trunk), shared by
-- every process of a deployment. 'closed' lets calls through and counts consecutive service
-- failures from streak_started_at; 'open' stops new calls until next_probe_at; 'half-open' is a
-- probe in flight (its lease ends at next_probe_at, after which another process may probe).
CREATE TABLE breakers (
  key text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('llm', 'stt', 'tts', 'realtime', 'trunk')),
  name text NOT NULL,
  state text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half-open')),
  failures integer NOT NULL DEFAULT 0,
  streak_started_at timestamptz,
  opened_at timestamptz,
  next_probe_at timestamptz,
  probes integer NOT NULL DEFAULT 0,
  last_success_at timestamptz,
  last_failure_at timestamptz,
  last_error text,
  latency_ms double precision,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Why a paused batch is paused: 'operator' (the API's pause) or 'dependency-unavailable' (a
-- breaker its agent depends on opened; paused_dependency is that breaker's key, and the breaker's
-- first successful probe resumes the batch). Null while the batch is not paused.
ALTER TABLE batches
  ADD COLUMN pause_reason text CHECK (pause_reason IN ('operator', 'dependency-unavailable')),
  ADD COLUMN paused_dependency text;
CREATE INDEX batches_paused_dependency ON batches (paused_dependency) WHERE paused_dependency IS NOT NULL;
