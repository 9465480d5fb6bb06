-- 0002: the hostname of each daemon's machine, recorded at its start beside
-- its presence (SQLite's 0008): the page names a host by it, the machine id
-- on hover. Empty for a daemon that has not started since.
ALTER TABLE daemons ADD COLUMN hostname text NOT NULL DEFAULT '';
