-- 0015: when a judgement last wrote each entity (an observation: its
-- health, delivery or findings changed), set by the write it rides on, so
-- that "last judged" after a daemon's crash is its last judgement, not its
-- start (issue 39): no idle write, the observation's own time. NULL until
-- one is written.
ALTER TABLE entities ADD COLUMN observed_at REAL;
