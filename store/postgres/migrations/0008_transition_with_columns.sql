-- 0008: a transition and its derived columns in one statement (issue 27,
-- ADR-0059). Until now the store wrote the derived columns (migration
-- 0007) in a second statement after the transition's, its own commit and
-- WAL flush. The store now derives them before the call, from the row as
-- the transition will leave it (it read the row and the compare-and-set
-- guarantees that row is the one written over), and passes them in: the
-- UPDATE sets them with derived_rev = -1, which the revision trigger turns
-- into the new revision (migration 0007), so the row is fresh when it
-- commits. With p_derived false the columns are left stale, as before.
--
-- The row is locked and its host read in one lookup (migration 0006's
-- function looked the row up three times). watchdog_apply_transition
-- stays for a binary before this one.
CREATE FUNCTION watchdog_apply_transition_derived(
    p_type text, p_id text, p_revision bigint,
    p_from text, p_to text, p_reason_code text, p_message text, p_evidence text,
    p_actor text, p_trigger text, p_at double precision,
    p_terminal boolean, p_reason text, p_ended_at double precision, p_started_at double precision,
    p_timeout_seconds double precision, p_timeout_elapsed double precision,
    p_delivery text, p_reasons text,
    p_derived boolean, p_sev_rank integer, p_severity text, p_queue_items integer, p_queue_expires double precision)
RETURNS SETOF entities LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_host text;
BEGIN
    SELECT host_id INTO v_host FROM entities WHERE type = p_type AND id = p_id AND revision = p_revision FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO transitions (seq, entity_type, entity_id, from_lifecycle, to_lifecycle,
        reason_code, message, evidence, actor, trigger_name, at, host_id)
        VALUES (0, p_type, p_id, p_from, p_to, p_reason_code, p_message, p_evidence, p_actor, p_trigger, p_at, v_host)
        RETURNING seq INTO v_seq;
    RETURN QUERY UPDATE entities SET lifecycle = p_to, terminal = p_terminal, last_seq = v_seq,
        transition_reason = p_reason, lifecycle_at = p_at, ended_at = p_ended_at,
        started_at = COALESCE(started_at, p_started_at),
        timeout_seconds = COALESCE(p_timeout_seconds, timeout_seconds),
        timeout_elapsed = COALESCE(p_timeout_elapsed, timeout_elapsed),
        dead_since = CASE WHEN p_terminal THEN dead_since ELSE NULL END,
        delivery = COALESCE(p_delivery, delivery), reasons = COALESCE(p_reasons, reasons), updated_at = p_at,
        sev_rank = CASE WHEN p_derived THEN p_sev_rank ELSE sev_rank END,
        severity = CASE WHEN p_derived THEN p_severity ELSE severity END,
        queue_items = CASE WHEN p_derived THEN p_queue_items ELSE queue_items END,
        queue_expires = CASE WHEN p_derived THEN p_queue_expires ELSE queue_expires END,
        derived_rev = CASE WHEN p_derived THEN -1 ELSE derived_rev END
        WHERE type = p_type AND id = p_id
        RETURNING *;
END $$;

-- Two indexes of migration 0001 that no query reads (the severity, now a
-- derived column with its own indexes, and the recent ends, read by
-- nothing): each write of an entity updated them too.
DROP INDEX idx_entities_severity;
DROP INDEX idx_entities_recent;
