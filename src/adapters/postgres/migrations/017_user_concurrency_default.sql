-- Issue 24: a new user's limit on calls in progress is 200, not 10 (docs/decisions.md, "The default
-- per-user cap"). At the spec's default 10 calls a second and calls of a minute or two, 10 places
-- held a campaign to about 0.1 calls a second. Existing users keep the limit they have: an admin
-- may have chosen it, and the column cannot tell a chosen 10 from the old default.
ALTER TABLE users ALTER COLUMN max_concurrent_calls SET DEFAULT 200;
