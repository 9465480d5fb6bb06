-- 0001: entities, the append-only transitions log, attention dismissals.
-- Lifecycle is NULL for a legacy entity (imported before the vocabulary).
-- Health and delivery are persisted; severity is computed on read.
CREATE TABLE entities (
    type                   TEXT    NOT NULL,
    id                     TEXT    NOT NULL,
    label                  TEXT    NOT NULL DEFAULT '',
    lifecycle              TEXT,
    terminal               INTEGER NOT NULL DEFAULT 0 CHECK (terminal IN (0, 1)),
    last_seq               INTEGER NOT NULL DEFAULT 0,
    transition_reason      TEXT,               -- JSON StateReason of the last transition
    health                 TEXT    NOT NULL DEFAULT 'unknown',
    delivery               TEXT    NOT NULL DEFAULT 'unknown',
    reasons                TEXT    NOT NULL DEFAULT '[]',  -- JSON []StateReason: the probe's findings
    health_since           REAL,
    dead_since             REAL,               -- first conclusive death seen; survives restarts
    host_id                TEXT    NOT NULL DEFAULT '',
    boot_id                TEXT    NOT NULL DEFAULT '',
    pid                    INTEGER,
    pid_start_time         REAL,
    pid_start_ticks        INTEGER,
    supervisor_pid         INTEGER,
    heartbeat_file         TEXT    NOT NULL DEFAULT '',
    heartbeat_at           REAL,
    heartbeat_progress     TEXT    NOT NULL DEFAULT '',
    timeout_seconds        REAL,
    timeout_elapsed        REAL,
    artifacts_root         TEXT    NOT NULL DEFAULT '',
    artifacts              TEXT    NOT NULL DEFAULT '[]',  -- JSON []ArtifactSpec
    lock_files             TEXT    NOT NULL DEFAULT '[]',  -- JSON []string
    parent_type            TEXT    NOT NULL DEFAULT '',
    parent_id              TEXT    NOT NULL DEFAULT '',
    depends_on             TEXT    NOT NULL DEFAULT '[]',  -- JSON []string
    schedule_cron          TEXT    NOT NULL DEFAULT '',
    schedule_last_fired_at REAL,
    metadata               TEXT    NOT NULL DEFAULT '{}',
    started_at             REAL,
    ended_at               REAL,
    lifecycle_at           REAL,
    created_at             REAL    NOT NULL,
    updated_at             REAL    NOT NULL,
    PRIMARY KEY (type, id)
);

-- The sweep's query: open entities of one host.
CREATE INDEX idx_entities_open_by_host ON entities (host_id, type)
    WHERE terminal = 0 AND lifecycle IS NOT NULL;
-- Severity and attention queries: by dimension, recent first.
CREATE INDEX idx_entities_severity ON entities (health, delivery, lifecycle);
CREATE INDEX idx_entities_recent ON entities (terminal, updated_at DESC);
-- Children and dependants (teams of a show, plays of a show).
CREATE INDEX idx_entities_parent ON entities (parent_type, parent_id) WHERE parent_id != '';

CREATE TABLE transitions (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    entity_type    TEXT    NOT NULL,
    entity_id      TEXT    NOT NULL,
    from_lifecycle TEXT,
    to_lifecycle   TEXT    NOT NULL,
    reason_code    TEXT    NOT NULL DEFAULT '',
    message        TEXT    NOT NULL DEFAULT '',
    evidence       TEXT    NOT NULL DEFAULT '[]',
    actor          TEXT    NOT NULL,
    trigger_name   TEXT    NOT NULL DEFAULT '',
    at             REAL    NOT NULL,
    FOREIGN KEY (entity_type, entity_id) REFERENCES entities (type, id)
);
CREATE INDEX idx_transitions_entity ON transitions (entity_type, entity_id, seq);

-- History is never rewritten: a correction is a new row.
CREATE TRIGGER transitions_append_only_update BEFORE UPDATE ON transitions
BEGIN
    SELECT RAISE(ABORT, 'transitions is append-only');
END;
CREATE TRIGGER transitions_append_only_delete BEFORE DELETE ON transitions
BEGIN
    SELECT RAISE(ABORT, 'transitions is append-only');
END;

-- Defence in depth for the one write path: a lifecycle change must point
-- (last_seq) at a fresh audit row of this entity that records exactly this
-- change. Any other UPDATE of the column aborts.
CREATE TRIGGER entities_lifecycle_audited BEFORE UPDATE OF lifecycle ON entities
WHEN NEW.lifecycle IS NOT OLD.lifecycle
 AND NOT EXISTS (
    SELECT 1 FROM transitions t
     WHERE t.seq = NEW.last_seq
       AND NEW.last_seq > OLD.last_seq
       AND t.entity_type = NEW.type AND t.entity_id = NEW.id
       AND t.from_lifecycle IS OLD.lifecycle AND t.to_lifecycle = NEW.lifecycle)
BEGIN
    SELECT RAISE(ABORT, 'lifecycle change without its audit row');
END;

CREATE TABLE attention_dismissals (
    id                     TEXT    PRIMARY KEY,
    fingerprint            TEXT    NOT NULL,
    entity_type            TEXT    NOT NULL,
    entity_id              TEXT    NOT NULL,
    reason_code            TEXT    NOT NULL,
    status_at_dismissal    TEXT    NOT NULL,
    snoozed_until          REAL,               -- NULL = dismissed until status change
    dismissed_at           REAL    NOT NULL,
    dismissed_by           TEXT    NOT NULL DEFAULT 'operator',
    clear_on_status_change INTEGER NOT NULL DEFAULT 1 CHECK (clear_on_status_change IN (0, 1)),
    created_at             REAL    NOT NULL
);
CREATE UNIQUE INDEX idx_attention_dismissals_fp ON attention_dismissals (fingerprint);
CREATE INDEX idx_attention_dismissals_snoozed ON attention_dismissals (snoozed_until)
    WHERE snoozed_until IS NOT NULL;
CREATE INDEX idx_attention_dismissals_entity ON attention_dismissals (entity_type, entity_id);
