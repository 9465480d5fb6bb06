-- 0002: the triage log (SQLite's migration 0008). Every snooze and
-- dismissal adds one row per item, in the transaction that writes the
-- attention_dismissals rows: who acted on an item, and the batch of one
-- bulk action, outlive the dismissal row. Append-only.
CREATE TABLE attention_triage (
    seq           bigserial        PRIMARY KEY,
    batch         text             NOT NULL,
    at            double precision NOT NULL,
    action        text             NOT NULL CHECK (action IN ('snooze', 'dismiss')),
    fingerprint   text             NOT NULL,
    entity_type   text             NOT NULL,
    entity_id     text             NOT NULL,
    reason_code   text             NOT NULL,
    snoozed_until double precision,
    actor         text             NOT NULL
);
CREATE INDEX idx_attention_triage_fp ON attention_triage (fingerprint);
