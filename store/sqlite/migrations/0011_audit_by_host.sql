-- 0011: audit rows carry their entity's host (issue 27): each daemon of a
-- fleet reads and counts the audit rows of the hosts it owns, by host, as
-- it reads their entities (0010), not every writer's.
ALTER TABLE transitions ADD COLUMN host_id TEXT NOT NULL DEFAULT '';

-- The rows written before get their entity's host. History is otherwise
-- never rewritten: the append-only guard is lifted for this one statement
-- and put back as it was (0001's).
DROP TRIGGER transitions_append_only_update;
UPDATE transitions SET host_id = (SELECT e.host_id FROM entities e
    WHERE e.type = transitions.entity_type AND e.id = transitions.entity_id)
 WHERE EXISTS (SELECT 1 FROM entities e
    WHERE e.type = transitions.entity_type AND e.id = transitions.entity_id AND e.host_id != '');
CREATE TRIGGER transitions_append_only_update BEFORE UPDATE ON transitions
BEGIN
    SELECT RAISE(ABORT, 'transitions is append-only');
END;

-- The audit feed by host, in seq order.
CREATE INDEX idx_transitions_feed_by_host ON transitions (host_id, seq);
