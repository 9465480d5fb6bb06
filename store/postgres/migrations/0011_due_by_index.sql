-- 0011: what enforce_terminal and reap_phantoms may act on, by index, as
-- SQLite's 0016 (they run as often as every second): the open entities
-- with a recorded death, and those recorded process_dead or orphaned
-- (reap_phantoms' candidates, store.Filter.PhantomBefore). Both partial:
-- a healthy row is in neither, so neither costs its writes anything.
CREATE INDEX idx_entities_dead ON entities (host_id)
    WHERE NOT terminal AND lifecycle IS NOT NULL AND dead_since IS NOT NULL;
CREATE INDEX idx_entities_phantom ON entities (host_id)
    WHERE NOT terminal AND lifecycle IS NOT NULL AND health IN ('process_dead', 'orphaned');
