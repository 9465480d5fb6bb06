package live

import (
	"context"
	"fmt"
	"time"

	"watchdog/attention"
	"watchdog/store"
)

// Columns are the derived columns of e's row that the fleet-wide reads
// select and order by (store.Derived, ADR-0058): from Derive, the one
// derivation every surface reads, so the store's answer and the view's
// agree by construction. None depends on the time of a read. The
// drivers write them with each row once given to store.SetDerivation.
func Columns(e store.Entity) store.Derived {
	d := Derive(e, e.UpdatedAt)
	c := store.Derived{Type: e.Type, ID: e.ID, Revision: e.Revision, Rank: d.State.ListRank(), Items: len(d.Items)}
	if !d.State.Legacy() {
		c.Severity = d.State.Severity
	}
	if d.State.Outcome != "" && !attention.Lingers(d.State.Outcome, e.Health) {
		c.Expires = attention.Arrived(e.EndedAt, e.LifecycleAt, e.UpdatedAt)
	}
	return c
}

// staleBatch is how many stale rows one round of freshen derives.
const staleBatch = 1000

// freshen derives again the rows of hs whose derived columns are stale
// (written by a binary that does not derive, or upgraded to the columns)
// and writes them back, so the indexed read that follows sees every row
// as Derive sees it.
func freshen(ctx context.Context, fr store.FleetReader, hs store.Hosts) (int, error) {
	n := 0
	for {
		es, err := fr.StaleDerived(ctx, hs, staleBatch)
		if err != nil {
			return n, err
		}
		ds := make([]store.Derived, len(es))
		for i := range es {
			ds[i] = Columns(es[i])
		}
		if err := fr.SetDerived(ctx, ds); err != nil {
			return n, err
		}
		n += len(es)
		if len(es) < staleBatch {
			return n, nil
		}
	}
}

// FillColumns derives every stale row of the store (every row of a
// database just upgraded to the derived columns, ADR-0058) and reports
// how many: what the daemon runs once at its start, in the background,
// so the first fleet-wide read does not pay for it. Nothing to do for a
// source without the columns.
func (v *View) FillColumns(ctx context.Context) (int, error) {
	fr, ok := v.src.(store.FleetReader)
	if !ok {
		return 0, nil
	}
	n, err := freshen(ctx, fr, store.AllHosts())
	if err != nil {
		return n, fmt.Errorf("fill the derived columns: %w", err)
	}
	return n, nil
}

// fleetReader is the view's source as a store.FleetReader, when it is one
// and the view does not hold every entity of host (all: every host's;
// Complete: another host's, or its own when it dropped the aged-out ones,
// ADR-0060): the reads that would otherwise make a view of the whole
// scope, and the selection they read. It does not Sync the view: a read
// by index goes to the store, whose every statement sees each write
// committed before it (so every write acknowledged before the read, by any
// daemon), and the view's own rows are not read. Whether the view holds
// the scope is its selection as last synced: when that is out of date the
// read is answered either way, by the store, or by For, which syncs first.
func (v *View) fleetReader(host string, all bool) (store.FleetReader, store.Hosts, bool) {
	fr, ok := v.src.(store.FleetReader)
	if !ok || v.Complete(host, all) {
		return nil, store.Hosts{}, false
	}
	sel := store.Only(host)
	if all {
		sel = store.AllHosts()
	}
	return fr, sel, true
}

// ListResult is a page of a list read by index: its entries (limit+1 at
// most: the extra one says a page follows), each derived at the read's
// now as the view derives its own, how many entities the filter selects,
// and how many of them come before the page.
type ListResult struct {
	Entries       []Entry
	Total, Before int
}

// ListPage is a page of the list of host's entities (all: every host's),
// read by index from the store when the view does not hold them
// (ADR-0058). ok is false when the view holds them or its store has no
// such read: the caller reads For's view instead.
func (v *View) ListPage(ctx context.Context, host string, all bool, q store.ListQuery, now time.Time) (res ListResult, ok bool, err error) {
	fr, sel, ok := v.fleetReader(host, all)
	if !ok {
		return ListResult{}, false, nil
	}
	q.Hosts = sel
	pg, err := fr.ListPage(ctx, q)
	if err != nil {
		return ListResult{}, false, fmt.Errorf("fleet read: %w", err)
	}
	if pg.Stale {
		// Rows the page may have placed by stale columns: derived and
		// written back, then the page read again (a row made stale after
		// that is of a write not acknowledged before this read). In a
		// busy fleet that is common (a row between an observation's
		// commit and its columns' statement), so the second read skips
		// the counts when no derived column decides them: the total
		// without a severity filter, and what comes before the first
		// page or an id-ordered one.
		if _, err := freshen(ctx, fr, sel); err != nil {
			// The store refuses the write back (a disk at its reserve, a
			// read-only file): the read is still owed, the slow way.
			return ListResult{}, false, nil
		}
		first := pg
		q.NoCounts = q.Severities == nil && (q.After == nil || q.ByID)
		if pg, err = fr.ListPage(ctx, q); err != nil {
			return ListResult{}, false, fmt.Errorf("fleet read: %w", err)
		}
		if q.NoCounts {
			pg.Total, pg.Before = first.Total, first.Before
		}
	}
	res = ListResult{Entries: make([]Entry, len(pg.Rows)), Total: pg.Total, Before: pg.Before}
	for i := range pg.Rows {
		res.Entries[i] = EntryOf(pg.Rows[i], now)
	}
	return res, true, nil
}

// Scope is what the operator's page shows of every host's entities
// besides its table, read from the store when the view does not hold
// them (ADR-0058): the hosts of the entities of type typ (every type when
// "") and how many entities are legacy. ok is false when the view holds
// every host's, or its store has no such read.
func (v *View) Scope(ctx context.Context, typ string) (hosts []string, legacy int, ok bool, err error) {
	// Neither the hosts nor the legacy count read a derived column:
	// nothing to freshen.
	fr, sel, ok := v.fleetReader("", true)
	if !ok {
		return nil, 0, false, nil
	}
	hosts, legacy, err = fr.Scope(ctx, sel, typ)
	if err != nil {
		return nil, 0, false, fmt.Errorf("fleet read: %w", err)
	}
	return hosts, legacy, true, nil
}

// ForQueue is For for a read of the attention queue (View.Attention,
// Get and EntityItems of its items): when the view does not hold host's
// entities and its store reads by index, a view of the queue's
// candidates only (the rows with items not aged out at now), read and
// derived now, which the read uses and drops (never Sync it); else For.
//
// A view that dropped the aged-out entities (EvictAgedOut) still holds
// every candidate of its hosts: it answers itself.
func (v *View) ForQueue(ctx context.Context, host string, all bool, now time.Time) (*View, error) {
	if v.Holds(host, all) {
		// Its own view answers, synced (forRead syncs, and reads the
		// store if the view no longer holds the scope after).
		return v.forRead(ctx, host, all, v.Holds)
	}
	fr, sel, ok := v.fleetReader(host, all)
	if ok {
		if _, err := freshen(ctx, fr, sel); err != nil {
			// The store refuses the write back: the slow way.
			ok = false
		}
	}
	if !ok {
		return v.forRead(ctx, host, all, v.Holds)
	}
	// The window as the reader reads it: a later now only drops more.
	es, err := fr.QueueCandidates(ctx, sel, attention.Since(now, v.FailureWindow()))
	if err != nil {
		return nil, fmt.Errorf("fleet read: %w", err)
	}
	// The dismissals from the store, read after the candidates: every
	// one acknowledged before this read, without a Sync of the view
	// (which waits for the feed's horizon and reads its own host's rows).
	ds, err := v.src.Dismissals(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet read: %w", err)
	}
	o := New(v.src, v.now, v.FailureWindow())
	o.hosts = func() store.Hosts { return sel }
	o.apply(store.Batch{Entities: es}, false)
	o.mu.Lock()
	o.sel, o.dismissals = sel, ds
	o.mu.Unlock()
	return o, nil
}
