package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// seed registers a running session per (id, host) and fails the ones
// named in failed, through the real write path.
func (d *daemon) seed(t *testing.T, hosts map[string]string, failed ...string) {
	t.Helper()
	ctx := context.Background()
	for id, host := range hosts {
		running := "running"
		if _, err := d.w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: id, Lifecycle: &running, HostID: host}, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range failed {
		req := transitions.Request{Type: "session", ID: id, To: "failed", Actor: transitions.ActorOrchestrator,
			Reason: &state.StateReason{Code: state.RunFailedExitNonzero, Message: "exit 3"}}
		if _, err := d.w.Transition(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(items []wire.Entity) []string {
	var out []string
	for _, e := range items {
		out = append(out, e.ID)
	}
	slices.Sort(out)
	return out
}

// TestListFollowsPages: List walks every page of the daemon's list, with
// the filters sent as the API's parameters.
func TestListFollowsPages(t *testing.T) {
	d := newDaemon(t, "")
	d.seed(t, map[string]string{"s-1": "h1", "s-2": "h1", "s-3": "h2", "s-4": "h2", "s-5": "h1", "s-6": "", "s-7": "h2"}, "s-3", "s-5")
	c := New(d.srv.URL, "")
	c.listPage = 2 // seven entities: four pages
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		q    wire.EntityFilter
		want string
	}{
		{"all", wire.EntityFilter{}, "[s-1 s-2 s-3 s-4 s-5 s-6 s-7]"},
		{"one host", wire.EntityFilter{Host: "h1"}, "[s-1 s-2 s-5]"},
		{"failed ones", wire.EntityFilter{Severities: []state.Severity{state.SeverityCritical}}, "[s-3 s-5]"},
		{"type alias", wire.EntityFilter{Type: "run", Host: "h2"}, "[s-3 s-4 s-7]"},
		{"no such host", wire.EntityFilter{Host: "h9"}, "[]"},
	} {
		list, err := c.List(ctx, tc.q, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := fmt.Sprint(ids(list.Items)); got != tc.want || list.Total != len(list.Items) || list.Next != "" || list.Items == nil {
			t.Errorf("%s: items %s (total %d, next %q), want %s", tc.name, got, list.Total, list.Next, tc.want)
		}
	}
	if _, err := c.List(ctx, wire.EntityFilter{Type: "spaceship"}, false); !errors.Is(err, wire.ErrBadInput) || !strings.Contains(err.Error(), "spaceship") {
		t.Errorf("unknown type: %v", err)
	}
}

// TestTransitionsFollowsPages: an entity's history read a row per page is
// the store's whole history.
func TestTransitionsFollowsPages(t *testing.T) {
	d := newDaemon(t, "")
	d.seed(t, map[string]string{"s-1": "h1"}, "s-1")
	c := New(d.srv.URL, "")
	c.rowsPage = 1
	rows, err := c.Transitions(context.Background(), "session", "s-1")
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.st.Transitions(context.Background(), "session", "s-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) || len(rows) != 2 || rows[1].To != "failed" || rows[1].Seq != want[1].Seq {
		t.Errorf("rows %+v, want the store's %d", rows, len(want))
	}
	if _, err := c.Transitions(context.Background(), "session", "nobody"); !errors.Is(err, transitions.ErrNotFound) {
		t.Errorf("unknown entity: %v", err)
	}
}

// TestAttentionSnoozeDismiss: the queue read through the client, and a
// snooze and a dismissal sent through it, hide what the API then hides;
// an unknown fingerprint is not found and a wrong token unauthorized.
func TestAttentionSnoozeDismiss(t *testing.T) {
	d := newDaemon(t, "tok")
	d.seed(t, map[string]string{"s-1": "h1", "s-2": "h2", "s-3": "h1"}, "s-1", "s-2", "s-3")
	c := New(d.srv.URL, "tok")
	ctx := context.Background()
	fp := func(id string) string { return attention.Fingerprint("session", id, state.RunFailedExitNonzero) }
	queue := func(q attention.Query) []string {
		t.Helper()
		got, err := c.Attention(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range got.Items {
			out = append(out, it.Fingerprint)
		}
		slices.Sort(out)
		return out
	}
	if got := queue(attention.Query{}); fmt.Sprint(got) != fmt.Sprint([]string{fp("s-1"), fp("s-2"), fp("s-3")}) {
		t.Fatalf("queue %v", got)
	}
	if got := queue(attention.Query{Host: "h2"}); fmt.Sprint(got) != fmt.Sprint([]string{fp("s-2")}) {
		t.Errorf("host h2: %v", got)
	}
	if got := queue(attention.Query{Severities: []state.Severity{state.SeverityWarning}}); len(got) != 0 {
		t.Errorf("warnings: %v", got)
	}
	if err := c.Snooze(ctx, fp("s-1"), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c.Dismiss(ctx, fp("s-2")); err != nil {
		t.Fatal(err)
	}
	if got := queue(attention.Query{}); fmt.Sprint(got) != fmt.Sprint([]string{fp("s-3")}) {
		t.Errorf("after snooze and dismiss: %v", got)
	}
	if got := queue(attention.Query{IncludeDismissed: true, Limit: 2}); len(got) != 2 {
		t.Errorf("include_dismissed, limit 2: %v", got)
	}

	// Failure cases
	if err := c.Dismiss(ctx, "session:s-1:run.health.stalled"); !errors.Is(err, transitions.ErrNotFound) || !strings.Contains(err.Error(), `no attention item has fingerprint "session:s-1:run.health.stalled"`) {
		t.Errorf("unknown fingerprint: %v", err)
	}
	if err := c.Snooze(ctx, "nonsense", time.Now().Add(time.Hour)); !errors.Is(err, wire.ErrBadInput) {
		t.Errorf("malformed fingerprint: %v", err)
	}
	if err := New(d.srv.URL, "wrong").Dismiss(ctx, fp("s-3")); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong token: %v", err)
	}
	if got := queue(attention.Query{}); fmt.Sprint(got) != fmt.Sprint([]string{fp("s-3")}) {
		t.Errorf("a refused dismissal changed the queue: %v", got)
	}
}
