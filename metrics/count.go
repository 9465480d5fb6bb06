package metrics

import (
	"context"
	"fmt"
	"maps"
	"time"

	"watchdog/live"
	"watchdog/state"
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

type itemKey struct {
	severity state.Severity
	typ      string
}

// counts is one scrape's worth of entity gauges.
type counts struct {
	entities  map[entityKey]int
	states    map[stateKey]int
	reasons   map[reasonKey]int
	attention map[itemKey]int
	legacy    int
	// leftovers counts leftover processes by entity type.
	leftovers map[string]int
}

// same is whether o counts exactly what n counts.
func (n *counts) same(o *counts) bool {
	return n.legacy == o.legacy && maps.Equal(n.entities, o.entities) && maps.Equal(n.states, o.states) &&
		maps.Equal(n.reasons, o.reasons) && maps.Equal(n.attention, o.attention) && maps.Equal(n.leftovers, o.leftovers)
}

// count syncs the live view and derives every entity gauge by the view's own
// definitions, for the hosts owns accepts (nil: all).
func count(ctx context.Context, src Source, now time.Time, owns func(host string) bool) (*counts, error) {
	if err := src.Sync(ctx); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	n := &counts{
		entities:  map[entityKey]int{},
		states:    map[stateKey]int{},
		reasons:   map[reasonKey]int{},
		attention: map[itemKey]int{},
		leftovers: map[string]int{},
	}
	// A scrape asks about each host several times: ask owns once per host.
	owned := map[string]bool{}
	mine := func(host string) bool {
		if owns == nil {
			return true
		}
		v, ok := owned[host]
		if !ok {
			v = owns(host)
			owned[host] = v
		}
		return v
	}
	src.Groups(func(g live.Group, size int) {
		if !mine(g.Host) {
			return
		}
		if g.Legacy {
			n.legacy += size
			return
		}
		typ := knownType(g.Type)
		n.entities[entityKey{typ, g.Severity, g.Tone}] += size
		n.states[stateKey{typ, knownState(typ, g.Lifecycle), healthLabel(g.Health), deliveryLabel(g.Delivery)}] += size
	})
	for k, size := range src.ActiveReasons(now) {
		if !mine(k.Host) {
			continue
		}
		code := k.Code
		if !state.Registered(code) {
			code = unknown
		}
		n.reasons[reasonKey{code, k.Severity}] += size
	}
	for k, size := range src.QueueItems(now) {
		if mine(k.Host) {
			n.attention[itemKey{k.Severity, knownType(k.Type)}] += size
		}
	}
	for k, size := range src.Leftovers(now) {
		if mine(k.Host) {
			n.leftovers[knownType(k.Type)] += size
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
