package store

// Cursor is how far a reader of the change feed has read: the last entity
// revision and the last audit seq it has seen, and, where the store orders
// its feed by the writing transaction (PostgreSQL: writers commit in
// parallel, so numbers do not commit in their order; ADR-0053), the
// transaction of each (RevisionTx, SeqTx; always 0 on SQLite, whose one
// writer commits numbers in order). The zero Cursor reads from the
// beginning. A cursor is the store's to interpret: a reader keeps the
// Next of the batches it read (or a FeedHead) and hands it back whole.
type Cursor struct{ Revision, Seq, RevisionTx, SeqTx int64 }

// AuditOnly is c for a reader that wants the audit rows from c on and
// every entity from the beginning (the live view's start).
func (c Cursor) AuditOnly() Cursor { return Cursor{Seq: c.Seq, SeqTx: c.SeqTx} }

// Batch is one read of the change feed.
type Batch struct {
	// Entities are the rows written since the cursor, each in its current
	// content (a row written twice appears once, at its latest revision),
	// in the feed's order (revision order; on PostgreSQL the writing
	// transaction's order first, so revisions may go back across
	// transactions but never for one entity).
	Entities []Entity
	// Transitions are the audit rows appended since the cursor, in the
	// feed's order (seq order; on PostgreSQL by transaction first, and
	// for one entity always in seq order).
	Transitions []AuditRow
	// Next is the cursor after this batch.
	Next Cursor
	// More is set when a limit cut either list: read again from Next.
	More bool
}
