-- 0009: who wrote each row (issue 36), as SQLite's 0013: the entity's
-- registering principal and its proven uid, each audit row's principal.
-- watchdog_apply_transition_by is 0008's function with the principal;
-- the older functions stay for a binary before this one.
ALTER TABLE entities ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE entities ADD COLUMN owner_uid bigint;
ALTER TABLE transitions ADD COLUMN principal text NOT NULL DEFAULT '';

CREATE FUNCTION watchdog_apply_transition_by(
    p_type text, p_id text, p_revision bigint,
    p_from text, p_to text, p_reason_code text, p_message text, p_evidence text,
    p_actor text, p_trigger text, p_at double precision,
    p_terminal boolean, p_reason text, p_ended_at double precision, p_started_at double precision,
    p_timeout_seconds double precision, p_timeout_elapsed double precision,
    p_delivery text, p_reasons text,
    p_derived boolean, p_sev_rank integer, p_severity text, p_queue_items integer, p_queue_expires double precision,
    p_principal text)
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
        reason_code, message, evidence, actor, trigger_name, at, host_id, principal)
        VALUES (0, p_type, p_id, p_from, p_to, p_reason_code, p_message, p_evidence, p_actor, p_trigger, p_at, v_host, p_principal)
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
