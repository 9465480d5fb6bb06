package store

// Cursor is how far a change-feed reader has read: the last revision and
// audit seq and, on PostgreSQL, their transactions (ADR-0053; 0 on SQLite).
// A reader hands back a batch's Next (or a FeedHead) whole.
type Cursor struct{ Revision, Seq, RevisionTx, SeqTx int64 }

// AuditOnly is c for a reader that wants the audit rows from c on and
// every entity from the beginning (the live view's start).
func (c Cursor) AuditOnly() Cursor { return Cursor{Seq: c.Seq, SeqTx: c.SeqTx} }

// Batch is one read of the change feed.
type Batch struct {
	// Entities are the rows written since the cursor, each once at its latest
	// revision, in feed order (never going back for one entity; ADR-0053).
	Entities []Entity
	// Transitions are the audit rows appended since the cursor, in feed order.
	Transitions []AuditRow
	// Next is the cursor after this batch.
	Next Cursor
	// More is set when a limit cut either list: read again from Next.
	More bool
}

// Hosts selects entities by host_id: with All every host but List, else List
// only (the host-less entities are host ""; ADR-0056).
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
	// Hosts are the hosts read (an audit row's host is its entity's at write).
	Hosts Hosts
	// EntitiesOnly reads no audit rows (a host just come to own); Next then
	// says nothing of them.
	EntitiesOnly bool
}
