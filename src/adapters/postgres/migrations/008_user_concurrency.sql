-- Each user's limit on calls in progress at once, single and batch calls together (issue 13): a
-- single dial beyond it answers 429 CONCURRENCY_LIMIT, a batch waits for a free place. 10 unless
-- the admin sets another.
ALTER TABLE users ADD COLUMN max_concurrent_calls integer NOT NULL DEFAULT 10
  CHECK (max_concurrent_calls BETWEEN 1 AND 100000);

-- Every dial counts the user's calls in progress under the user's row lock: this keeps that count
-- to the user's few ONGOING rows instead of their whole call history.
CREATE INDEX calls_ongoing_user_idx ON calls (user_id) WHERE status = 'ONGOING';
