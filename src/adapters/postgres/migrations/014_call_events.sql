-- Issue 16: the events of a single call its statusCallBackUrl asks for (statusCallBackEvents):
-- a JSON array of 'call.started', 'call.answered', 'call.completed'. Null (every call before this
-- migration, and a dial that does not say) means ["call.completed"], what was always sent.
ALTER TABLE calls ADD COLUMN status_callback_events jsonb;
