-- 0007: fleet-wide reads by index (ADR-0058), as SQLite's 0012: the
-- list's severity rank and severity, and the queue's candidacy (how many
-- attention items, and the arrival they age out from, NULL when they
-- never do), derived by live.Columns from the same live.Derive the view
-- uses, stored with the revision they were derived from (derived_rev). A
-- row whose revision moved since is stale, and the fleet-wide reader
-- derives it again before it reads: the columns of an existing database
-- are filled lazily, at its first fleet-wide read.
ALTER TABLE entities ADD COLUMN derived_rev bigint;
ALTER TABLE entities ADD COLUMN sev_rank integer NOT NULL DEFAULT 0;
ALTER TABLE entities ADD COLUMN severity text NOT NULL DEFAULT '';
ALTER TABLE entities ADD COLUMN queue_items integer NOT NULL DEFAULT 0;
ALTER TABLE entities ADD COLUMN queue_expires double precision;

-- Writing the derived columns (which sets derived_rev to the row's
-- revision) is no change of the entity: it keeps its revision and its
-- transaction, so nothing moves on the feed. A write that sets
-- derived_rev to -1 says it leaves the derived columns as they are (a
-- heartbeat): it takes a new revision, and derived_rev follows it. Every
-- other write takes a new revision and leaves the columns stale.
CREATE OR REPLACE FUNCTION entities_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.derived_rev IS DISTINCT FROM OLD.derived_rev
       AND NEW.derived_rev IS NOT NULL AND NEW.derived_rev <> -1 THEN
        NEW.revision := OLD.revision;
        NEW.xid := OLD.xid;
        RETURN NEW;
    END IF;
    NEW.revision := nextval('store_revision');
    NEW.xid := pg_current_xact_id();
    IF TG_OP = 'UPDATE' AND NEW.derived_rev = -1 THEN
        NEW.derived_rev := NEW.revision;
    END IF;
    RETURN NEW;
END $$;

-- The list's first page in the severity order, of every host or of one.
CREATE INDEX idx_entities_severity_order ON entities (sev_rank, updated_at DESC, type, id);
CREATE INDEX idx_entities_severity_order_by_host ON entities (host_id, sev_rank, updated_at DESC, type, id);
-- The queue's candidates: the few rows with items, by host.
CREATE INDEX idx_entities_queue ON entities (host_id, queue_expires) WHERE queue_items > 0;
-- The rows to derive again.
CREATE INDEX idx_entities_stale ON entities (host_id) WHERE derived_rev IS DISTINCT FROM revision;
