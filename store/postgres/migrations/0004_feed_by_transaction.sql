-- 0004: the change feed without a global lock (ADR-0053).
--
-- Until now every write transaction took the feed lock so that revisions
-- and seqs committed in the order they were drawn, one writer at a time.
-- Now each row records the transaction that wrote it (xid8, never wraps)
-- and a reader takes only rows of transactions below its snapshot's xmin,
-- in (xid, number) order: below xmin every transaction has ended, so no
-- later commit can land behind the reader's cursor, and writers commit in
-- parallel. Rows written before this migration keep xid 0: they are all
-- committed, and among them the order is their numbers', as before.
ALTER TABLE entities ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE transitions ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
CREATE INDEX idx_entities_feed ON entities (xid, revision);
CREATE INDEX idx_transitions_feed ON transitions (xid, seq);
-- Only the feed read entities by revision; one index fewer per write.
DROP INDEX idx_entities_revision;

-- The triggers still draw every number, so no writer can forget, and now
-- stamp the writer's transaction instead of taking the lock.
CREATE OR REPLACE FUNCTION entities_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.revision := nextval('store_revision');
    NEW.xid := pg_current_xact_id();
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION transitions_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.seq := nextval('transitions_seq');
    NEW.xid := pg_current_xact_id();
    RETURN NEW;
END $$;

DROP FUNCTION watchdog_feed_lock();

-- The writes of entities and audit rows no longer notify: a transaction
-- that notifies takes a lock PostgreSQL holds until after its commit
-- (notifications queue in commit order), which would make every writer
-- commit one at a time again. The store sends one notification after its
-- commits instead, coalesced (store/postgres: tell). Dismissals, rare,
-- keep their trigger.
DROP TRIGGER entities_notify ON entities;
DROP TRIGGER transitions_notify ON transitions;

-- A transition in one statement (one round trip, committed on its own):
-- the compare-and-set on the revision the caller decided on (any write of
-- the row since, an observation's too, moves it: the caller reads again
-- and decides again), the audit row, then the lifecycle pointing at it.
-- The row is locked first, so an entity's audit rows get their seqs in
-- the order its transitions commit. No row back: the compare-and-set
-- failed and nothing was written.
CREATE FUNCTION watchdog_apply_transition(
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
        reason_code, message, evidence, actor, trigger_name, at)
        VALUES (0, p_type, p_id, p_from, p_to, p_reason_code, p_message, p_evidence, p_actor, p_trigger, p_at)
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
