-- The calls list (GET /api/v1/calls, issue 16): a user's calls newest first, paged on
-- (created_at, id). With both columns in the index, the page boundary `(created_at, id) < (...)`
-- is an index condition, so page 1000 costs what page 1 does; the old (user_id, created_at)
-- index made every later page re-read the rows before it. The new index serves every query the
-- old one did, so the old one goes (one index more on the busiest table is write cost for nothing).
CREATE INDEX calls_user_page_idx ON calls (user_id, created_at DESC, id DESC);
DROP INDEX calls_user_idx;

-- The `phoneNumber` filter: every call to one number, without reading the user's other calls.
CREATE INDEX calls_user_phone_idx ON calls (user_id, phone_number, created_at DESC, id DESC);

-- The dashboard's single calls (no batch): a partial index, small beside a campaign's calls.
CREATE INDEX calls_user_single_idx ON calls (user_id, created_at DESC, id DESC) WHERE batch_id IS NULL;
