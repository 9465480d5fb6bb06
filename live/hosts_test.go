package live

import (
	"context"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// TestCountsKeepTheHost: two hosts' entities and a host-less one in one
// view. The groups, the active reasons and the queue's counts carry each
// entity's host, so a daemon of a fleet can count what it owns; the
// counts STATUS= and the queue read stay the whole view's.
func TestCountsKeepTheHost(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	for _, e := range []struct{ host, id string }{{"h1", "a"}, {"h1", "b"}, {"h2", "c"}, {"", "d"}} {
		running := "running"
		if _, err := w.Register(ctx, transitions.Registration{
			Entity: store.Entity{Type: "session", ID: e.id, HostID: e.host, Lifecycle: &running}, Actor: transitions.ActorOrchestrator,
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: e.id, To: "failed", Actor: transitions.ActorOrchestrator,
			Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
			t.Fatal(err)
		}
	}
	v := New(st, clock.Now, 0)
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	now := clock.Now()

	tests := []struct {
		host                   string
		groups, reasons, items int
	}{
		{"h1", 2, 2, 2},
		{"h2", 1, 1, 1},
		{"", 1, 1, 1},
		{"h3", 0, 0, 0},
	}
	groups := map[string]int{}
	v.Groups(func(g Group, n int) { groups[g.Host] += n })
	reasons := map[string]int{}
	for k, n := range v.ActiveReasons(now) {
		if k.Code == state.RunFailedExitNonzero && k.Severity == state.SeverityCritical {
			reasons[k.Host] += n
		}
	}
	items := map[string]int{}
	for k, n := range v.QueueItems(now) {
		if k.Type != "session" || k.Severity != state.SeverityCritical {
			t.Errorf("queue kind %+v: want critical session items only", k)
		}
		items[k.Host] += n
	}
	for _, tt := range tests {
		if groups[tt.host] != tt.groups || reasons[tt.host] != tt.reasons || items[tt.host] != tt.items {
			t.Errorf("host %q: %d entities, %d reasons, %d items; want %d, %d, %d", tt.host,
				groups[tt.host], reasons[tt.host], items[tt.host], tt.groups, tt.reasons, tt.items)
		}
	}
	if c := v.Counts(now); c.Queue != 4 || c.QueueBySeverity[state.SeverityCritical] != 4 || c.Entities != 4 {
		t.Errorf("the whole view's counts: %+v, want every host's 4 entities and items", c)
	}
	if q := v.Attention(attentionQuery(), now); q.Total != 4 {
		t.Errorf("the queue shows %d items, want every host's 4", q.Total)
	}
}
