-- 0006: a dismissal or snooze covers one occurrence of its item.
--
-- occurrence_at is the first_seen_at of the item when it was dismissed:
-- the item is hidden only while it is that same occurrence, so a
-- condition that clears and comes back is a new item, shown at once.
-- NULL (rows written before this migration) covers any occurrence, as
-- before; clear_on_status_change stays the floor for those.
ALTER TABLE attention_dismissals ADD COLUMN occurrence_at REAL;
