package live

import (
	"time"

	"watchdog/attention"
	"watchdog/state"
)

// Group is a set of entities alike in everything the entity gauges look
// at; the view keeps the size of every group as entities change, so a
// scrape reads a few hundred groups instead of every entity.
type Group struct {
	Type      string
	Lifecycle string // "" for a legacy entity
	Legacy    bool
	Open      bool
	Health    state.Health
	Delivery  state.Delivery
	Severity  state.Severity
	Tone      state.Tone
}

func groupOf(e *Entry) Group {
	return Group{
		Type: e.Entity.Type, Lifecycle: e.Entity.LifecycleOr(""), Legacy: e.Legacy(), Open: e.Open(),
		Health: e.Entity.Health, Delivery: e.Entity.Delivery, Severity: e.State.Severity, Tone: e.State.Tone,
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

// EachCurrentCoded calls fn, under the view's read lock, for every entry
// that holds reason codes or attention items and counts at now (open, or
// with an outcome inside the failure window; the view's window): the
// candidates of the queue and of the active-reasons gauge. The rules of
// Each apply to fn.
func (v *View) EachCurrentCoded(now time.Time, fn func(*Entry)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, e := range v.coded {
		if e.Current(now, v.window) {
			fn(e)
		}
	}
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
	for _, e := range v.entries {
		if !e.Legacy() && e.State.Outcome != "" && !e.AgedOut(now, v.window) {
			c.InWindow++
		}
	}
	v.queueCounts(now, &c)
	return c
}

// QueueBySeverity counts the queue items no dismissal hides, by severity:
// Counts' QueueBySeverity without the walk over every entity that the
// other counts need.
func (v *View) QueueBySeverity(now time.Time) map[state.Severity]int {
	c := Counts{QueueBySeverity: map[state.Severity]int{}}
	for _, s := range attention.Severities {
		c.QueueBySeverity[s] = 0
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	v.queueCounts(now, &c)
	return c.QueueBySeverity
}

// queueCounts adds the queue's counts to c; v.mu is held.
func (v *View) queueCounts(now time.Time, c *Counts) {
	for _, e := range v.coded {
		if len(e.Items) == 0 || !e.Current(now, v.window) {
			continue
		}
		for _, it := range e.Items {
			if d, ok := v.dismissals[it.Fingerprint]; ok && attention.Hides(d, it.Status, now) {
				continue
			}
			c.Queue++
			c.QueueBySeverity[it.Severity]++
		}
	}
}
