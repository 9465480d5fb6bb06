-- 0004: one row the daemon rewrites every second to prove that the store
-- takes writes (/readyz): a read-only or failing file system shows here
-- before an orchestrator's registration fails on it.
CREATE TABLE health_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at REAL NOT NULL
);
INSERT INTO health_probe (id, at) VALUES (1, 0);
