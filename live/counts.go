package live

import (
	"time"

	"watchdog/attention"
	"watchdog/state"
)

// Group is a set of entities alike in everything the gauges look at; the
// view keeps each group's size, so a scrape reads groups, not entities.
type Group struct {
	Host      string
	Type      string
	Lifecycle string // "" for a legacy entity
	Legacy    bool
	Open      bool
	Health    state.Health
	Delivery  state.Delivery
	Severity  state.Severity
	Tone      state.Tone
}

func groupOf(e *record) Group {
	return Group{
		Host: e.host(), Type: e.typ(), Lifecycle: e.lifecycleOr(""), Legacy: e.legacy(), Open: e.open(),
		Health: e.healthOf(), Delivery: e.deliveryOf(), Severity: e.severity(), Tone: e.toneOf(),
	}
}

// Groups calls fn with every non-empty group and its size.
func (v *View) Groups(fn func(Group, int)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for g, n := range v.groups {
		fn(g, n)
	}
}

// ActiveReasons counts the codes held by the entities that count, by
// holder's severity: watchdog_reasons_active.
func (v *View) ActiveReasons(now time.Time) map[ReasonKey]int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make(map[ReasonKey]int, len(v.idx.openReasons))
	for k, n := range v.idx.openReasons {
		out[k] = n
	}
	ended := make([]int, len(v.idx.reasonKeys))
	for _, e := range inWindow(v.idx.endedCoded, now, v.window) {
		for _, c := range e.codes {
			ended[c.id]++
		}
	}
	for r, n := range ended {
		if n > 0 {
			out[v.idx.reasonKeys[r]] += n
		}
	}
	return out
}

// Leftovers counts the processes leftover findings of the entities that
// count name, by type and host: watchdog_leftover_processes.
func (v *View) Leftovers(now time.Time) map[LeftoverKey]int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := make(map[LeftoverKey]int, len(v.idx.leftovers))
	for k, n := range v.idx.leftovers {
		out[k] = n
	}
	for _, e := range inWindow(v.idx.endedCoded, now, v.window) {
		if n := e.leftovers(); n > 0 {
			out[LeftoverKey{e.typ(), e.host()}] += n
		}
	}
	return out
}

// Counts are the numbers STATUS=, `watchdog status`, the metrics and the
// queue agree on: open is non-legacy and not terminal; in the window, an
// outcome reached less than the failure window ago.
type Counts struct {
	// Entities counts every non-legacy entity; Legacy the others.
	Entities, Legacy int
	// Open counts the open entities, OpenBySeverity them by severity.
	Open           int
	OpenBySeverity map[state.Severity]int
	// InWindow counts the entities with an outcome inside the failure window.
	InWindow int
	// Queue counts the items no dismissal hides: GET /api/attention's total.
	Queue           int
	QueueBySeverity map[state.Severity]int
}

// Counts counts the view at now with its failure window.
func (v *View) Counts(now time.Time) Counts {
	c := Counts{OpenBySeverity: map[state.Severity]int{}, QueueBySeverity: map[state.Severity]int{}}
	for _, s := range state.Severities {
		c.OpenBySeverity[s] = 0
	}
	for _, s := range attention.Severities {
		c.QueueBySeverity[s] = 0
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	for g, n := range v.groups {
		switch {
		case g.Legacy:
			c.Legacy += n
			continue
		case g.Open:
			c.Open += n
			c.OpenBySeverity[g.Severity] += n
		}
		c.Entities += n
	}
	c.InWindow = len(inWindow(v.idx.ended, now, v.window))
	v.addQueue(now, &c)
	return c
}

// QueueBySeverity is Counts' QueueBySeverity without the walk over entities.
func (v *View) QueueBySeverity(now time.Time) map[state.Severity]int {
	out := map[state.Severity]int{}
	for _, s := range attention.Severities {
		out[s] = 0
	}
	for k, n := range v.QueueItems(now) {
		out[k.Severity] += n
	}
	return out
}

// QueueItems counts the queue items no dismissal hides (watchdog_attention_items).
func (v *View) QueueItems(now time.Time) map[ItemKey]int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.queueItems(now)
}

// addQueue adds the queue's counts to c; v.mu is held.
func (v *View) addQueue(now time.Time, c *Counts) {
	for k, n := range v.queueItems(now) {
		c.Queue += n
		c.QueueBySeverity[k.Severity] += n
	}
}

// queueItems counts the queue by ItemKey (v.mu held), less each item a
// dismissal hides.
func (v *View) queueItems(now time.Time) map[ItemKey]int {
	out := make(map[ItemKey]int, len(v.idx.openItems))
	for k, n := range v.idx.openItems {
		out[k] = n
	}
	// Every item of an entry has the entry's severity (ItemsFor).
	for _, e := range inWindow(v.idx.endedCoded, now, v.window) {
		if len(e.items) > 0 {
			out[itemKeyOf(e, &e.items[0])] += len(e.items)
		}
	}
	cut := attention.Since(now, v.window)
	// An item reached from two dismissals is taken away once.
	var hidden map[string]bool
	for fp := range v.dismissals {
		for _, m := range [...]map[string]itemRef{v.idx.byFP, v.idx.bySubsumed} {
			r, ok := m[fp]
			if !ok || r.e.agedOut(cut) {
				continue
			}
			it := r.item()
			if hidden[it.Fingerprint] {
				continue
			}
			if _, ok := attention.Acknowledgement(v.dismissals, it, now); !ok {
				continue
			}
			if hidden == nil {
				hidden = map[string]bool{}
			}
			hidden[it.Fingerprint] = true
			k := itemKeyOf(r.e, it)
			if out[k]--; out[k] == 0 {
				delete(out, k)
			}
		}
	}
	return out
}
