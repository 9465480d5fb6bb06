package live

import (
	"time"

	"watchdog/attention"
	"watchdog/state"
)

// Group is a set of entities alike in everything the entity gauges look
// at; the view keeps the size of every group as entities change, so a
// scrape reads a few hundred groups instead of every entity. Host is the
// host the entities were recorded on ("" for host-less ones): a daemon of
// a fleet counts only the groups it owns, and hosts are few, so the
// groups grow by a small factor.
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

// ActiveReasons counts, at now with the view's failure window, the reason
// codes held by the entities that count (open, or with an outcome inside
// the window), by the holder's severity: watchdog_reasons_active. The
// open entities' counts are kept as they change; only the entities inside
// the window are read.
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

// Leftovers counts, at now with the view's failure window, the processes
// the leftover findings (run.health.leftover_processes) of the entities
// that count name, by the entity's type and host:
// watchdog_leftover_processes. The entities that count are
// ActiveReasons': open (or lingering), or ended inside the window, the
// ones the sweep still looks at (an older finding is what the last look
// saw, not what is seen now). The open ones are kept as they change;
// only the entities inside the window are read.
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
// queue agree on (see the package doc for the definitions).
type Counts struct {
	// Entities counts every non-legacy entity; Legacy the others.
	Entities, Legacy int
	// Open counts the open entities, OpenBySeverity them by severity.
	Open           int
	OpenBySeverity map[state.Severity]int
	// InWindow counts the entities with an outcome inside the failure
	// window.
	InWindow int
	// Queue counts the queue items no dismissal hides, QueueBySeverity
	// them by severity: GET /api/attention's total and by_severity.
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

// QueueBySeverity counts the queue items no dismissal hides, by severity:
// Counts' QueueBySeverity without the walk over every entity that the
// other counts need.
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

// QueueItems counts the queue items no dismissal hides by severity, entity
// type and host (watchdog_attention_items); only non-zero kinds are in the
// map.
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

// queueItems counts the queue by ItemKey; v.mu is held. The items of open
// entities are counted as they change; those of the entities inside the
// window are read; then each dismissal that hides an item of an entity
// that counts, its own or carried over (attention.Acknowledgement),
// takes it away again.
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
	// An item may be reached from two dismissals (its own and a carried
	// one): it is taken away once.
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
