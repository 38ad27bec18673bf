-- The SIP status code of the carrier's final answer to a call placed through a SIP trunk (200,
-- 486, 404, ...); null for simulated calls and for calls that never got a final answer.
ALTER TABLE calls ADD COLUMN sip_code integer;
