-- 0014: the settings each daemon's judgement uses (its thresholds section,
-- as YAML), recorded at its start and at each reload with the config file
-- they came from, so that a command on the database judges as the daemon
-- does whatever config it finds itself (issue 39). Empty for a daemon that
-- has not started since.
ALTER TABLE daemons ADD COLUMN settings TEXT NOT NULL DEFAULT '';
ALTER TABLE daemons ADD COLUMN settings_source TEXT NOT NULL DEFAULT '';
ALTER TABLE daemons ADD COLUMN settings_at REAL NOT NULL DEFAULT 0;
