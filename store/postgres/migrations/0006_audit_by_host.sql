-- 0006: audit rows carry their entity's host (issue 27): each daemon of a
-- fleet reads and counts the audit rows of the hosts it owns, by host, as
-- it reads their entities (0005), not every writer's.
ALTER TABLE transitions ADD COLUMN host_id text NOT NULL DEFAULT '';

-- The rows written before get their entity's host. History is otherwise
-- never rewritten: the append-only guard is off for this one statement,
-- inside the migration's transaction.
ALTER TABLE transitions DISABLE TRIGGER transitions_append_only;
UPDATE transitions t SET host_id = e.host_id FROM entities e
 WHERE e.type = t.entity_type AND e.id = t.entity_id AND e.host_id <> '';
ALTER TABLE transitions ENABLE TRIGGER transitions_append_only;

-- The audit feed by host, in the feed's order (0004's).
CREATE INDEX idx_transitions_feed_by_host ON transitions (host_id, xid, seq);

-- 0004's transition, the audit row now stamped with the entity's host in
-- the same statement (read from the row it has just locked).
CREATE OR REPLACE FUNCTION watchdog_apply_transition(
    p_type text, p_id text, p_revision bigint,
    p_from text, p_to text, p_reason_code text, p_message text, p_evidence text,
    p_actor text, p_trigger text, p_at double precision,
    p_terminal boolean, p_reason text, p_ended_at double precision, p_started_at double precision,
    p_timeout_seconds double precision, p_timeout_elapsed double precision,
    p_delivery text, p_reasons text)
RETURNS SETOF entities LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
BEGIN
    PERFORM 1 FROM entities WHERE type = p_type AND id = p_id AND revision = p_revision FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO transitions (seq, entity_type, entity_id, from_lifecycle, to_lifecycle,
        reason_code, message, evidence, actor, trigger_name, at, host_id)
        SELECT 0, p_type, p_id, p_from, p_to, p_reason_code, p_message, p_evidence, p_actor, p_trigger, p_at, e.host_id
          FROM entities e WHERE e.type = p_type AND e.id = p_id
        RETURNING seq INTO v_seq;
    RETURN QUERY UPDATE entities SET lifecycle = p_to, terminal = p_terminal, last_seq = v_seq,
        transition_reason = p_reason, lifecycle_at = p_at, ended_at = p_ended_at,
        started_at = COALESCE(started_at, p_started_at),
        timeout_seconds = COALESCE(p_timeout_seconds, timeout_seconds),
        timeout_elapsed = COALESCE(p_timeout_elapsed, timeout_elapsed),
        dead_since = CASE WHEN p_terminal THEN dead_since ELSE NULL END,
        delivery = COALESCE(p_delivery, delivery), reasons = COALESCE(p_reasons, reasons), updated_at = p_at
        WHERE type = p_type AND id = p_id
        RETURNING *;
END $$;
