-- 0005: the change feed and the exit status of a watched process.
--
-- Every write to an entity row, by any writer (the daemon, a CLI with
-- --db, an older binary), takes the next store revision, so a reader that
-- remembers the last revision it saw reads "rows with revision > R" and
-- misses nothing. Triggers assign it, not the Go code, so no write path
-- can forget. SQLite has one writer at a time, so revisions commit in
-- order: a reader never sees R+1 before R. Audit rows need no revision:
-- their seq (AUTOINCREMENT) already only grows.
ALTER TABLE entities ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;

CREATE TABLE store_revision (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO store_revision (id, revision) VALUES (1, (SELECT COALESCE(MAX(rowid), 0) FROM entities));
UPDATE entities SET revision = rowid;
CREATE INDEX idx_entities_revision ON entities (revision);

CREATE TRIGGER entities_revision_insert AFTER INSERT ON entities
BEGIN
    UPDATE store_revision SET revision = revision + 1 WHERE id = 1;
    UPDATE entities SET revision = (SELECT revision FROM store_revision WHERE id = 1)
     WHERE rowid = NEW.rowid;
END;
-- The WHEN clause keeps the trigger's own UPDATE (which changes only
-- revision) from firing it again, whatever recursive_triggers says.
CREATE TRIGGER entities_revision_update AFTER UPDATE ON entities
WHEN NEW.revision IS OLD.revision
BEGIN
    UPDATE store_revision SET revision = revision + 1 WHERE id = 1;
    UPDATE entities SET revision = (SELECT revision FROM store_revision WHERE id = 1)
     WHERE rowid = NEW.rowid;
END;

-- How the entity's process ended, when the kernel said so (pidfd
-- PIDFD_INFO_EXIT): the exit code, or the signal that killed it, and when
-- it was seen. NULL: not known (still running, not watched by pidfd, or
-- a kernel that does not keep it).
ALTER TABLE entities ADD COLUMN exit_code INTEGER;
ALTER TABLE entities ADD COLUMN exit_signal INTEGER;
ALTER TABLE entities ADD COLUMN exit_at REAL;
