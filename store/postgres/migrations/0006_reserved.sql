-- 0006: reserved for the audit rows' host (branch fnotify), which lands
-- beside 0007; this placeholder changes nothing and is replaced by that
-- migration at merge (the loader wants every number once).
SELECT 1;
