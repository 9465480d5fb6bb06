-- 0007: leadership leases. Daemons sharing one store elect one leader for
-- the host-less work (teams, shows, plays' dependency rules, host-less
-- schedules, judging silent hosts) by holding a named lease: a row taken
-- with a compare-and-set when free or expired, renewed by its holder
-- every few seconds. expires_at is Unix seconds, as every time column.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at REAL NOT NULL
);
