-- 0008: the triage log. Every snooze and dismissal adds one row per item,
-- in the transaction that writes the attention_dismissals rows, so who
-- acted on an item (and with which batch: the items of one bulk action
-- share it) outlives the dismissal row, which an upsert replaces and
-- vacuum drops. Append-only; times are Unix seconds.
CREATE TABLE attention_triage (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    batch         TEXT NOT NULL,
    at            REAL NOT NULL,
    action        TEXT NOT NULL CHECK (action IN ('snooze', 'dismiss')),
    fingerprint   TEXT NOT NULL,
    entity_type   TEXT NOT NULL,
    entity_id     TEXT NOT NULL,
    reason_code   TEXT NOT NULL,
    snoozed_until REAL,
    actor         TEXT NOT NULL
);
CREATE INDEX idx_attention_triage_fp ON attention_triage (fingerprint);
