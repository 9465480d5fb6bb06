-- 0005: each daemon of a fleet reads the change feed of its own host only
-- (ADR-0056): the feed by host, in the feed's order (0004's).
CREATE INDEX idx_entities_feed_by_host ON entities (host_id, xid, revision);
