-- 0008: the hostname of each daemon's machine, recorded at its start beside
-- its presence, so that the page names a host by what a person calls it
-- ("build-7") rather than its 32-character machine id. Empty for a daemon
-- that has not started since (and for host ids no daemon ever named).
ALTER TABLE daemons ADD COLUMN hostname TEXT NOT NULL DEFAULT '';
