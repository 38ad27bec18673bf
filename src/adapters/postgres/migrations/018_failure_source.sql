-- Issue 24: whose failure a failed attempt was. 'contact' (busy, no answer, rejected, voicemail,
-- hung up) or 'service' (a model, speech server or trunk down, a process cut off); null while the
-- call is up and for a call that did not fail. A service failure is not charged and gives the
-- batch contact its attempt back; service_failures counts those in a row, for the backoff of the
-- contact's next try.
ALTER TABLE calls ADD COLUMN failure_source text CHECK (failure_source IN ('contact', 'service'));
ALTER TABLE batch_contacts ADD COLUMN service_failures integer NOT NULL DEFAULT 0;
