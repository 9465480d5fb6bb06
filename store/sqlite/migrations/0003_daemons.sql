-- 0003: which hosts have a daemon sweeping them. A daemon judges another
-- host's entities (by their posted heartbeats) only when no daemon of that
-- host has been seen lately: two daemons must not give one entity two
-- verdicts in turn.
CREATE TABLE daemons (
    host_id TEXT PRIMARY KEY,
    seen_at REAL NOT NULL
);
