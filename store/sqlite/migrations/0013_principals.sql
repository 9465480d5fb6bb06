-- 0013: who wrote each row (issue 36). An entity keeps the principal that
-- registered it (owner: "uid:1000 (alice)", a token's name) and, when the
-- kernel proved one, its uid (owner_uid; NULL: none proven, so its
-- processes are reported, never signalled). Each audit row keeps the
-- principal that caused it ("reaper@host-13" for the daemon's own jobs).
ALTER TABLE entities ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE entities ADD COLUMN owner_uid INTEGER;
ALTER TABLE transitions ADD COLUMN principal TEXT NOT NULL DEFAULT '';
