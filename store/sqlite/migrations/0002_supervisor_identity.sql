-- 0002: the supervisor's start time, so that a supervisor pid reused by
-- another process after the supervisor died is not taken for it (which
-- would hide an orphan). NULL: not recorded (entities from before, or a
-- supervisor that was already gone at registration).
ALTER TABLE entities ADD COLUMN supervisor_start_time REAL;
