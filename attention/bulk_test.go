package attention

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// TestDismissAll: a bulk snooze on a real store is all or none: one
// malformed or unknown fingerprint refuses the whole request, naming
// every such fingerprint, and writes nothing; otherwise every item is
// snoozed and logged once, under one batch, with the actor.
func TestDismissAll(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st}
	running := "running"
	var fps []string
	for _, id := range []string{"s-1", "s-2", "s-3"} {
		if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: id, Lifecycle: &running}, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: id, To: "failed", Actor: transitions.ActorOrchestrator,
			Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
			t.Fatal(err)
		}
		fps = append(fps, Fingerprint("session", id, state.RunFailedExitNonzero))
	}
	now := time.Now()
	until := now.Add(4 * time.Hour)
	for _, c := range []struct {
		name  string
		fps   []string
		want  error
		names []string
	}{
		{"none", nil, ErrBadFingerprint, []string{"no fingerprint"}},
		{"one malformed", append([]string{"s-1"}, fps...), ErrBadFingerprint, []string{`"s-1" is not`}},
		{"two unknown", append(append([]string{}, fps...), "session:nobody:run.failed.exit_nonzero", "session:s-1:run.health.stalled"), ErrNoItem,
			[]string{`"session:nobody:run.failed.exit_nonzero", "session:s-1:run.health.stalled"`, "nothing was snoozed"}},
		{"over the bound", make([]string, MaxBulk+1), ErrTooMany, []string{"at most 1000"}},
	} {
		if c.name == "over the bound" {
			for i := range c.fps {
				c.fps[i] = Fingerprint("session", "x"+string(rune('a'+i%26))+strings.Repeat("y", i/26), state.RunFailedExitNonzero)
			}
		}
		_, err := DismissAll(ctx, st, Bulk{Fingerprints: c.fps, Until: until, By: "operator"}, now, 0)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		for _, n := range c.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("%s: %q does not say %q", c.name, err, n)
			}
		}
		if ds, _ := st.Dismissals(ctx); len(ds) != 0 {
			t.Errorf("%s: a refused request wrote %d dismissals", c.name, len(ds))
		}
	}

	// A duplicate counts once.
	got, err := DismissAll(ctx, st, Bulk{Fingerprints: append(fps, fps[0]), Until: until, ClearOnStatusChange: true, By: "operator"}, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Dismissals) != 3 || got.Batch == "" {
		t.Fatalf("%+v", got)
	}
	log, err := st.TriageLog(ctx, 0, 100)
	if err != nil || len(log) != 3 {
		t.Fatalf("triage log: %+v %v", log, err)
	}
	for i, e := range log {
		if e.Fingerprint != fps[i] || e.Batch != got.Batch || e.By != "operator" || e.Action != store.TriageSnooze || e.SnoozedUntil.Sub(until).Abs() > time.Millisecond {
			t.Errorf("log %d: %+v", i, e)
		}
	}
	q, err := Read(ctx, st, Query{}, now)
	if err != nil || q.Total != 0 {
		t.Errorf("the queue after the bulk snooze: %d items, %v", q.Total, err)
	}

	// A cluster: its key, or its bare code; a code nobody registered is
	// refused; a cluster whose items are all snoozed has none to act on.
	for _, k := range []string{"cluster_run.failed.exit_nonzero", "run.failed.exit_nonzero"} {
		if id, err := ParseCluster(k); err != nil || id != "cluster_run.failed.exit_nonzero" {
			t.Errorf("ParseCluster(%q) = %q, %v", k, id, err)
		}
	}
	if _, err := ParseCluster("cluster_run.failed.nope"); !errors.Is(err, ErrBadCluster) {
		t.Errorf("an unregistered code: %v", err)
	}
	all, err := Read(ctx, st, ClusterQuery(0), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClusterMembers(all, "cluster_run.failed.exit_nonzero"); !errors.Is(err, ErrNoItem) {
		t.Errorf("a cluster all snoozed: %v", err)
	}
	all, err = Read(ctx, st, ClusterQuery(0), until.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := ClusterMembers(all, "cluster_run.failed.exit_nonzero"); err != nil || len(m) != 3 {
		t.Errorf("the cluster once the snooze ended: %v %v", m, err)
	}
}
