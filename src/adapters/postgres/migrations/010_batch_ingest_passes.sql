-- Ingestion passes a batch has started, counted in the database: a process that dies on a batch
-- (killed, out of memory while parsing its 16 MB body) must not begin again from zero after each
-- restart, or a poisoned batch would be re-parsed forever. Recovery fails a batch that used up its
-- passes instead of taking it up again.
ALTER TABLE batches ADD COLUMN ingest_passes integer NOT NULL DEFAULT 0;
