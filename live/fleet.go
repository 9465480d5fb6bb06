package live

import (
	"context"
	"fmt"
	"time"

	"watchdog/attention"
	"watchdog/store"
)

// Columns are the derived columns of e's row the fleet-wide reads use
// (ADR-0058): from Derive, so store and view agree by construction.
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

// freshen derives and writes back the rows of hs whose columns are stale.
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

// FillColumns derives every stale row of the store and reports how many.
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

// fleetReader is the source as a store.FleetReader when the view is not
// Complete for the scope. No Sync: each statement sees every committed write.
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
// most), the filter's total, and how many come before the page.
type ListResult struct {
	Entries       []Entry
	Total, Before int
}

// ListPage is a page of host's entities read by index from the store
// (ADR-0058); ok false means the caller reads For's view instead.
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
		// Rows placed by stale columns: derive, write back, read again; the second
		// read skips counts no derived column decides.
		if _, err := freshen(ctx, fr, sel); err != nil {
			// The write back was refused (disk reserve, read-only): the slow way.
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

// Scope is the hosts of type typ's entities and the legacy count, from the store.
func (v *View) Scope(ctx context.Context, typ string) (hosts []string, legacy int, ok bool, err error) {
	// Neither reads a derived column: nothing to freshen.
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

// ForQueue is For for a queue read: from the store by index, a throwaway
// view of the queue's candidates only; else For.
func (v *View) ForQueue(ctx context.Context, host string, all bool, now time.Time) (*View, error) {
	if v.Holds(host, all) {
		// Its own view answers, synced.
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
	// Dismissals after the candidates: every one acknowledged before this read.
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
