package store

// Cursor is how far a reader of the change feed has read: the last entity
// revision and the last audit seq it has seen. The zero Cursor reads from
// the beginning.
type Cursor struct{ Revision, Seq int64 }

// Batch is one read of the change feed.
type Batch struct {
	// Entities are the rows written since the cursor's revision, each in
	// its current content (a row written twice appears once, at its
	// latest revision), in revision order.
	Entities []Entity
	// Transitions are the audit rows appended since the cursor's seq, in
	// seq order.
	Transitions []AuditRow
	// Next is the cursor after this batch.
	Next Cursor
	// More is set when a limit cut either list: read again from Next.
	More bool
}
