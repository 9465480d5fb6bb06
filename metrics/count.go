package metrics

import (
	"context"
	"fmt"
	"time"

	"watchdog/attention"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

type entityKey struct {
	typ      string
	severity state.Severity
	tone     state.Tone
}

type reasonKey struct {
	code     state.ReasonCode
	severity state.Severity
}

// counts is one scrape's worth of entity gauges.
type counts struct {
	entities  map[entityKey]int
	states    map[stateKey]int
	reasons   map[reasonKey]int
	attention map[state.Severity]int
	legacy    int
}

// judged is what the gauges need to know about a group of entities.
type judged struct {
	typ, lifecycle, outcome string
	ns                      state.NormalizedState
	// agedOut: an outcome older than the failure window.
	agedOut bool
	// items are the attention items' codes of each entity of the group
	// (empty when it needs no attention).
	items []state.ReasonCode
}

// judge applies the write path's severity rules (the type's graph and
// state.Normalize, which is transitions.View without the reason list) and
// the attention queue's own rules (package attention), so the gauges count
// exactly what `watchdog status` and GET /api/attention show.
func judge(g store.SummaryGroup, now time.Time) judged {
	j := judged{typ: knownType(g.Type)}
	j.lifecycle = knownState(j.typ, g.Lifecycle)
	if gr, err := transitions.Lookup(j.typ); err == nil {
		j.outcome = gr.Outcome(j.lifecycle)
	}
	j.ns = state.Normalize(j.lifecycle, j.outcome, g.Health, g.Delivery, nil, now)
	// attention.AgedOut in terms of the store's Recent flag, which the
	// store computed by the same rule against attention.Since.
	j.agedOut = j.outcome != "" && !g.Recent
	if !j.agedOut && attention.Attends(j.ns.Severity) {
		j.items = attention.Codes(j.typ, j.outcome, g.TransitionCode, g.ReasonCodes, g.Health, g.Delivery)
	}
	return j
}

// count reads the store and derives every entity gauge.
func count(ctx context.Context, src Source, now time.Time, window time.Duration) (*counts, error) {
	since := attention.Since(now, window)
	n := &counts{
		entities:  map[entityKey]int{},
		states:    map[stateKey]int{},
		reasons:   map[reasonKey]int{},
		attention: map[state.Severity]int{},
	}
	var codes []state.ReasonCode
	err := src.SummaryGroups(ctx, since, func(g store.SummaryGroup) {
		if g.Legacy {
			n.legacy += g.Count
			return
		}
		j := judge(g, now)
		n.entities[entityKey{j.typ, j.ns.Severity, j.ns.Tone}] += g.Count
		n.states[stateKey{j.typ, j.lifecycle, healthLabel(g.Health), deliveryLabel(g.Delivery)}] += g.Count
		if j.agedOut {
			return
		}
		codes = append(codes[:0], g.TransitionCode)
		codes = append(codes, g.ReasonCodes...)
		for i, c := range codes {
			if c == "" || containsCode(codes[:i], c) {
				continue
			}
			code := c
			if !state.Registered(code) {
				code = unknown
			}
			n.reasons[reasonKey{code, j.ns.Severity}] += g.Count
		}
		n.attention[j.ns.Severity] += g.Count * len(j.items)
	})
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	// Take out what dismissals hide: each dismissal names one item of one
	// entity, and hides it by the queue's own rule.
	dismissed, err := src.DismissedSummaries(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	for _, ds := range dismissed {
		if ds.Entity.Legacy {
			continue
		}
		j := judge(ds.Entity, now)
		if containsCode(j.items, state.ReasonCode(ds.Dismissal.ReasonCode)) && attention.Hides(ds.Dismissal, ds.Entity.Lifecycle, now) {
			n.attention[j.ns.Severity]--
		}
	}
	return n, nil
}

func healthLabel(h state.Health) string {
	for _, v := range state.Healths {
		if v == h {
			return string(h)
		}
	}
	return unknown
}

func deliveryLabel(d state.Delivery) string {
	for _, v := range state.Deliveries {
		if v == d {
			return string(d)
		}
	}
	return unknown
}

func containsCode(list []state.ReasonCode, c state.ReasonCode) bool {
	for _, v := range list {
		if v == c {
			return true
		}
	}
	return false
}
