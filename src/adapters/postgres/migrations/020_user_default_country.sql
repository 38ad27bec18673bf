-- Issue 25 §8: the country a user's numbers without "+" are read in (ISO 3166-1 alpha-2, e.g. US,
-- GB). Null: the server's OUTDIAL_DEFAULT_COUNTRY (docs/decisions.md, "One phone-number rule").
ALTER TABLE users ADD COLUMN default_country text;
ALTER TABLE users ADD CONSTRAINT users_default_country_alpha2 CHECK (default_country ~ '^[A-Z]{2}$');
