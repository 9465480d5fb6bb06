-- 0001: the logical schema of SQLite's migrations 0001-0006, in one step.
--
-- Times are Unix seconds in double precision, as SQLite's REAL columns
-- (see ADR 0025): the store's one pair of time conversions serves both
-- backends, and a time read back equals the time written to the
-- nanosecond's float, which timestamptz (microseconds) would round.
-- JSON columns are text, not jsonb: the write path compares the stored
-- text (a sweep writes only what differs) and reads back what it wrote.
CREATE TABLE entities (
    type                   text             NOT NULL,
    id                     text             NOT NULL,
    label                  text             NOT NULL DEFAULT '',
    lifecycle              text,
    terminal               boolean          NOT NULL DEFAULT false,
    last_seq               bigint           NOT NULL DEFAULT 0,
    transition_reason      text,
    health                 text             NOT NULL DEFAULT 'unknown',
    delivery               text             NOT NULL DEFAULT 'unknown',
    reasons                text             NOT NULL DEFAULT '[]',
    health_since           double precision,
    dead_since             double precision,
    host_id                text             NOT NULL DEFAULT '',
    boot_id                text             NOT NULL DEFAULT '',
    pid                    bigint,
    pid_start_time         double precision,
    pid_start_ticks        bigint,
    supervisor_pid         bigint,
    heartbeat_file         text             NOT NULL DEFAULT '',
    heartbeat_at           double precision,
    heartbeat_progress     text             NOT NULL DEFAULT '',
    timeout_seconds        double precision,
    timeout_elapsed        double precision,
    artifacts_root         text             NOT NULL DEFAULT '',
    artifacts              text             NOT NULL DEFAULT '[]',
    lock_files             text             NOT NULL DEFAULT '[]',
    parent_type            text             NOT NULL DEFAULT '',
    parent_id              text             NOT NULL DEFAULT '',
    depends_on             text             NOT NULL DEFAULT '[]',
    schedule_cron          text             NOT NULL DEFAULT '',
    schedule_last_fired_at double precision,
    metadata               text             NOT NULL DEFAULT '{}',
    started_at             double precision,
    ended_at               double precision,
    lifecycle_at           double precision,
    created_at             double precision NOT NULL,
    updated_at             double precision NOT NULL,
    supervisor_start_time  double precision,
    exit_code              bigint,
    exit_signal            bigint,
    exit_at                double precision,
    revision               bigint           NOT NULL DEFAULT 0,
    PRIMARY KEY (type, id)
);
CREATE INDEX idx_entities_open_by_host ON entities (host_id, type)
    WHERE NOT terminal AND lifecycle IS NOT NULL;
CREATE INDEX idx_entities_severity ON entities (health, delivery, lifecycle);
CREATE INDEX idx_entities_recent ON entities (terminal, updated_at DESC);
CREATE INDEX idx_entities_parent ON entities (parent_type, parent_id) WHERE parent_id != '';
CREATE INDEX idx_entities_revision ON entities (revision);

CREATE TABLE transitions (
    seq            bigint           PRIMARY KEY,
    entity_type    text             NOT NULL,
    entity_id      text             NOT NULL,
    from_lifecycle text,
    to_lifecycle   text             NOT NULL,
    reason_code    text             NOT NULL DEFAULT '',
    message        text             NOT NULL DEFAULT '',
    evidence       text             NOT NULL DEFAULT '[]',
    actor          text             NOT NULL,
    trigger_name   text             NOT NULL DEFAULT '',
    at             double precision NOT NULL,
    FOREIGN KEY (entity_type, entity_id) REFERENCES entities (type, id)
);
CREATE INDEX idx_transitions_entity ON transitions (entity_type, entity_id, seq);

CREATE TABLE attention_dismissals (
    id                     text             PRIMARY KEY,
    fingerprint            text             NOT NULL,
    entity_type            text             NOT NULL,
    entity_id              text             NOT NULL,
    reason_code            text             NOT NULL,
    status_at_dismissal    text             NOT NULL,
    snoozed_until          double precision,
    dismissed_at           double precision NOT NULL,
    dismissed_by           text             NOT NULL DEFAULT 'operator',
    clear_on_status_change boolean          NOT NULL DEFAULT true,
    created_at             double precision NOT NULL,
    occurrence_at          double precision
);
CREATE UNIQUE INDEX idx_attention_dismissals_fp ON attention_dismissals (fingerprint);
CREATE INDEX idx_attention_dismissals_snoozed ON attention_dismissals (snoozed_until)
    WHERE snoozed_until IS NOT NULL;
CREATE INDEX idx_attention_dismissals_entity ON attention_dismissals (entity_type, entity_id);

CREATE TABLE daemons (
    host_id text             PRIMARY KEY,
    seen_at double precision NOT NULL
);

CREATE TABLE health_probe (
    id integer          PRIMARY KEY CHECK (id = 1),
    at double precision NOT NULL
);
INSERT INTO health_probe (id, at) VALUES (1, 0);

-- The change feed. Every entity write takes the next store revision and
-- every audit row the next seq, both assigned here, by triggers, so no
-- writer (this daemon, a CLI, psql) can forget. PostgreSQL runs writers
-- side by side, and a sequence hands out numbers in call order, not
-- commit order: a reader could see revision R+1 committed, move its
-- cursor past R, and never see R. So the triggers take the feed lock, a
-- transaction-level advisory lock held to commit, before drawing a
-- number: writers of entities and audit rows commit one at a time, in
-- the order of their numbers, as in SQLite. The store takes the same lock
-- first thing in each write transaction, before any row lock, so that two
-- of its writers can never deadlock over the lock and a row.
-- The lock's key is watchdog_feed_lock() (one place).
CREATE FUNCTION watchdog_feed_lock() RETURNS bigint LANGUAGE sql IMMUTABLE
    AS $$ SELECT 7015713420150001::bigint $$;

CREATE SEQUENCE store_revision AS bigint;
CREATE SEQUENCE transitions_seq AS bigint OWNED BY transitions.seq;

CREATE FUNCTION entities_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(watchdog_feed_lock());
    NEW.revision := nextval('store_revision');
    RETURN NEW;
END $$;
CREATE TRIGGER entities_revision BEFORE INSERT OR UPDATE ON entities
    FOR EACH ROW EXECUTE FUNCTION entities_revision();

CREATE FUNCTION transitions_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(watchdog_feed_lock());
    NEW.seq := nextval('transitions_seq');
    RETURN NEW;
END $$;
CREATE TRIGGER transitions_seq BEFORE INSERT ON transitions
    FOR EACH ROW EXECUTE FUNCTION transitions_seq();

-- History is never rewritten: a correction is a new row.
CREATE FUNCTION transitions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'transitions is append-only' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER transitions_append_only BEFORE UPDATE OR DELETE ON transitions
    FOR EACH ROW EXECUTE FUNCTION transitions_append_only();
CREATE TRIGGER transitions_no_truncate BEFORE TRUNCATE ON transitions
    FOR EACH STATEMENT EXECUTE FUNCTION transitions_append_only();

-- Defence in depth for the one write path (SQLite's
-- entities_lifecycle_audited): a lifecycle change must point (last_seq)
-- at a fresh audit row of this entity that records exactly this change.
-- Any other UPDATE of the column is refused.
CREATE FUNCTION entities_lifecycle_audited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.lifecycle IS DISTINCT FROM OLD.lifecycle AND NOT EXISTS (
        SELECT 1 FROM transitions t
         WHERE t.seq = NEW.last_seq
           AND NEW.last_seq > OLD.last_seq
           AND t.entity_type = NEW.type AND t.entity_id = NEW.id
           AND t.from_lifecycle IS NOT DISTINCT FROM OLD.lifecycle
           AND t.to_lifecycle = NEW.lifecycle) THEN
        RAISE EXCEPTION 'lifecycle change without its audit row' USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER entities_lifecycle_audited BEFORE UPDATE OF lifecycle ON entities
    FOR EACH ROW EXECUTE FUNCTION entities_lifecycle_audited();

-- DataVersion: every committed write of what the live view reads wakes
-- the stores listening on watchdog_changes (one notification per
-- transaction: PostgreSQL folds identical ones).
CREATE FUNCTION watchdog_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('watchdog_changes', '');
    RETURN NULL;
END $$;
CREATE TRIGGER entities_notify AFTER INSERT OR UPDATE OR DELETE ON entities
    FOR EACH STATEMENT EXECUTE FUNCTION watchdog_notify();
CREATE TRIGGER transitions_notify AFTER INSERT ON transitions
    FOR EACH STATEMENT EXECUTE FUNCTION watchdog_notify();
CREATE TRIGGER attention_dismissals_notify AFTER INSERT OR UPDATE OR DELETE ON attention_dismissals
    FOR EACH STATEMENT EXECUTE FUNCTION watchdog_notify();
