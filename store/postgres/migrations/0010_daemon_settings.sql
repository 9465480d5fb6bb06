-- 0010: the settings each daemon's judgement uses (SQLite's 0014): its
-- thresholds section as YAML, the config file they came from and when,
-- recorded at its start and at each reload.
ALTER TABLE daemons ADD COLUMN settings text NOT NULL DEFAULT '';
ALTER TABLE daemons ADD COLUMN settings_source text NOT NULL DEFAULT '';
ALTER TABLE daemons ADD COLUMN settings_at double precision NOT NULL DEFAULT 0;
