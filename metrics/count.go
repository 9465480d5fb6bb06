package metrics

import (
	"context"
	"fmt"
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

// counts is one scrape's worth of entity gauges.
type counts struct {
	entities  map[entityKey]int
	states    map[stateKey]int
	reasons   map[reasonKey]int
	attention map[state.Severity]int
	legacy    int
}

// count syncs the live view and derives every entity gauge from it: the
// group sizes the view keeps as entities change (entities, states,
// legacy), the reasons of the entities that count now, and the queue's
// counts by the view's own definition (live.Counts), so the gauges count
// exactly what `watchdog status` and GET /api/attention show.
func count(ctx context.Context, src Source, now time.Time) (*counts, error) {
	if err := src.Sync(ctx); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	n := &counts{
		entities: map[entityKey]int{},
		states:   map[stateKey]int{},
		reasons:  map[reasonKey]int{},
	}
	src.Groups(func(g live.Group, size int) {
		if g.Legacy {
			n.legacy += size
			return
		}
		typ := knownType(g.Type)
		n.entities[entityKey{typ, g.Severity, g.Tone}] += size
		n.states[stateKey{typ, knownState(typ, g.Lifecycle), healthLabel(g.Health), deliveryLabel(g.Delivery)}] += size
	})
	for k, size := range src.ActiveReasons(now) {
		code := k.Code
		if !state.Registered(code) {
			code = unknown
		}
		n.reasons[reasonKey{code, k.Severity}] += size
	}
	n.attention = src.QueueBySeverity(now)
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
