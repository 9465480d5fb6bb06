-- 0012: fleet-wide reads by index (ADR-0058). The list's severity rank
-- and severity, and the queue's candidacy (how many attention items, and
-- the arrival they age out from, NULL when they never do), derived by
-- live.Columns from the same live.Derive the view uses, stored with the
-- revision they were derived from (derived_rev). A row whose revision
-- moved since (a write by a binary that does not derive, or any row of a
-- database upgraded to this migration: derived_rev NULL) is stale, and
-- the fleet-wide reader derives it again before it reads: the columns of
-- an existing database are filled lazily, at its first fleet-wide read.
ALTER TABLE entities ADD COLUMN derived_rev INTEGER;
ALTER TABLE entities ADD COLUMN sev_rank INTEGER NOT NULL DEFAULT 0;
ALTER TABLE entities ADD COLUMN severity TEXT NOT NULL DEFAULT '';
ALTER TABLE entities ADD COLUMN queue_items INTEGER NOT NULL DEFAULT 0;
ALTER TABLE entities ADD COLUMN queue_expires REAL;

-- Writing the derived columns (which sets derived_rev to the row's
-- revision) is no change of the entity: no new revision, so nothing on
-- the feed and no reader of it derives the row again. A write that sets
-- derived_rev to -1 says it leaves the derived columns as they are (a
-- heartbeat): it takes a new revision, and derived_rev follows it. Every
-- other write takes a new revision and leaves the columns stale.
DROP TRIGGER entities_revision_update;
CREATE TRIGGER entities_revision_update AFTER UPDATE ON entities
WHEN NEW.revision IS OLD.revision AND (NEW.derived_rev IS OLD.derived_rev OR NEW.derived_rev = -1)
BEGIN
    UPDATE store_revision SET revision = revision + 1 WHERE id = 1;
    UPDATE entities SET revision = (SELECT revision FROM store_revision WHERE id = 1),
        derived_rev = CASE WHEN NEW.derived_rev = -1 THEN (SELECT revision FROM store_revision WHERE id = 1) ELSE NEW.derived_rev END
     WHERE rowid = NEW.rowid;
END;

-- The list's first page in the severity order, of every host or of one.
CREATE INDEX idx_entities_severity_order ON entities (sev_rank, updated_at DESC, type, id);
CREATE INDEX idx_entities_severity_order_by_host ON entities (host_id, sev_rank, updated_at DESC, type, id);
-- The queue's candidates: the few rows with items, by host.
CREATE INDEX idx_entities_queue ON entities (host_id, queue_expires) WHERE queue_items > 0;
-- The rows to derive again.
CREATE INDEX idx_entities_stale ON entities (host_id) WHERE derived_rev IS NOT revision;
