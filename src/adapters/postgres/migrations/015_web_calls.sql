-- Issue 17: calls from the dashboard's "Talk to this agent" button, the browser's microphone over a
-- WebSocket. 'phone' is every call placed through a provider (the simulator, a SIP trunk); 'web'
-- is a browser's. Existing rows are phone calls.
ALTER TABLE calls ADD COLUMN channel text NOT NULL DEFAULT 'phone' CHECK (channel IN ('phone', 'web'));
