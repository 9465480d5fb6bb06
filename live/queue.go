package live

import (
	"time"

	"watchdog/attention"
	"watchdog/store"
)

// Attention builds the attention queue at now over the items the view
// keeps in the queue's order, so a read sorts nothing. q.FailureWindow 0
// means the view's.
func (v *View) Attention(q attention.Query, now time.Time) attention.Queue {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if q.FailureWindow <= 0 {
		q.FailureWindow = v.window
	}
	cut := attention.Since(now, q.FailureWindow)
	return attention.AssembleOrdered(func(yield func(*attention.Item) bool) {
		for i := range v.idx.queue {
			r := &v.idx.queue[i]
			if r.agedOut(cut) || (q.Host != "" && r.e.host() != q.Host) {
				continue
			}
			if !yield(r.item()) {
				return
			}
		}
	}, v.dismissals, q, now)
}

// EntityItems are one entity's attention items as the queue serves them
// with include_dismissed at now; nil when it has none or aged out.
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
