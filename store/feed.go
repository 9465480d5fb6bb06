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

// Hosts selects entities by their host_id: when All, every host but those
// of List; else the hosts of List only. The host-less entities are the host
// "". A daemon of a fleet reads the feed of the hosts it owns (ADR-0056):
// its own (Only), or, while it leads, every host but those whose daemon is
// alive elsewhere (AllBut).
type Hosts struct {
	All  bool
	List []string
}

// AllHosts selects every entity.
func AllHosts() Hosts { return Hosts{All: true} }

// Only selects the entities of hosts.
func Only(hosts ...string) Hosts { return Hosts{List: hosts} }

// AllBut selects the entities of every host but hosts.
func AllBut(hosts ...string) Hosts { return Hosts{All: true, List: hosts} }

// Has says whether the entities of host are selected.
func (h Hosts) Has(host string) bool {
	for _, x := range h.List {
		if x == host {
			return !h.All
		}
	}
	return h.All
}

// Every says whether every entity is selected.
func (h Hosts) Every() bool { return h.All && len(h.List) == 0 }

// None says whether no entity is selected.
func (h Hosts) None() bool { return !h.All && len(h.List) == 0 }

// Minus is the hosts h selects and o does not: what a reader whose
// selection moved from o to h has not read.
func (h Hosts) Minus(o Hosts) Hosts {
	switch {
	case !h.All && !o.All: // h's not in o
		return Hosts{List: filterHosts(h.List, func(x string) bool { return !o.Has(x) })}
	case !h.All && o.All: // h's in o's exceptions
		return Hosts{List: filterHosts(h.List, func(x string) bool { return !o.Has(x) })}
	case h.All && !o.All: // everything but h's exceptions and o's list
		return Hosts{All: true, List: append(append([]string(nil), h.List...), o.List...)}
	default: // o's exceptions that h selects
		return Hosts{List: filterHosts(o.List, h.Has)}
	}
}

// Equal says whether h and o select the same hosts.
func (h Hosts) Equal(o Hosts) bool { return h.Minus(o).None() && o.Minus(h).None() }

func filterHosts(list []string, keep func(string) bool) []string {
	var out []string
	for _, x := range list {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// FeedFilter narrows a read of the change feed (ChangesFor).
type FeedFilter struct {
	// Hosts are the hosts whose entities and audit rows are read (an
	// audit row's host is its entity's when it was written).
	Hosts Hosts
	// EntitiesOnly reads no audit rows: a reader loading the entities of
	// a host it has just come to own, whose audit rows it follows
	// already. The batch's Next then says nothing of the audit rows.
	EntitiesOnly bool
}
