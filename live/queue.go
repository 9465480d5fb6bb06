package live

import (
	"slices"
	"time"

	"watchdog/attention"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

// Attention builds the attention queue at now from the view's items and
// dismissals: the same queue attention.Read builds from a store
// (attention.Assemble's rules, over items the view keeps in the queue's
// order, so a read walks them once and sorts nothing). q's FailureWindow,
// when 0, is the view's.
func (v *View) Attention(q attention.Query, now time.Time) attention.Queue {
	limit := q.Limit
	if limit <= 0 {
		limit = attention.DefaultLimit
	}
	type pick struct {
		r         itemRef
		dismissal *store.Dismissal
	}
	page := make([]pick, 0, min(limit, 64))
	bySeverity := map[state.Severity]int{}
	total := 0

	v.mu.RLock()
	if q.FailureWindow <= 0 {
		q.FailureWindow = v.window
	}
	cut := attention.Since(now, q.FailureWindow)
	ds := v.dismissals
	clusters := make([]int, len(v.idx.clusterIDs))
	// The queue is sorted by severity first: a run of one severity is
	// counted in run and added to bySeverity when it ends.
	var (
		runSeverity state.Severity
		run         int
	)
	for i := range v.idx.queue {
		r := &v.idx.queue[i]
		if r.agedOut(cut) {
			continue
		}
		if len(q.Severities) > 0 && !slices.Contains(q.Severities, r.severity) {
			continue
		}
		if q.Host != "" && r.e.host() != q.Host {
			continue
		}
		var dismissal *store.Dismissal
		if d, ok := attention.Acknowledgement(ds, r.item(), now); ok {
			if !q.IncludeDismissed {
				continue
			}
			dismissal = &d
		}
		total++
		if r.severity != runSeverity {
			if run > 0 {
				bySeverity[runSeverity] += run
			}
			runSeverity, run = r.severity, 0
		}
		run++
		clusters[r.cluster]++
		if len(page) < limit {
			page = append(page, pick{*r, dismissal})
		}
	}
	if run > 0 {
		bySeverity[runSeverity] += run
	}
	v.mu.RUnlock()

	out := attention.Queue{GeneratedAt: unixtime.Of(now), Total: total, BySeverity: bySeverity, Items: make([]attention.Item, 0, len(page))}
	for _, s := range attention.Severities {
		out.BySeverity[s] += 0
	}
	// Entries are never changed in place, so the page's items are read
	// after the lock as they were under it.
	for _, p := range page {
		it := p.r.item().At(now)
		it.ClusterSize = clusters[p.r.cluster]
		if p.dismissal != nil {
			it.MarkDismissed(*p.dismissal)
		}
		out.Items = append(out.Items, it)
	}
	return out
}

// EntityItems are the attention items of one entity as the queue serves
// them with include_dismissed at now (View.Attention's rules: none once
// the entity aged out of the failure window; each hidden one marked with
// its acknowledgement), in the entity's order; nil when it has none. The
// entity page's Snooze and Dismiss act on these.
func (v *View) EntityItems(typ, id string, now time.Time) []attention.Item {
	v.mu.RLock()
	defer v.mu.RUnlock()
	e := v.entries.Get(typ, id)
	if e == nil || len(e.items) == 0 || e.agedOut(attention.Since(now, v.window)) {
		return nil
	}
	out := make([]attention.Item, 0, len(e.items))
	for i := range e.items {
		it := e.items[i].At(now)
		if d, ok := attention.Acknowledgement(v.dismissals, &e.items[i], now); ok {
			it.MarkDismissed(d)
		}
		out = append(out, it)
	}
	return out
}

// Dismissal returns the dismissal of a fingerprint, if any.
func (v *View) Dismissal(fp string) (store.Dismissal, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d, ok := v.dismissals[fp]
	return d, ok
}
