package attention

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// TestDismiss: the one snooze/dismiss rule on a real store: only an item
// in the queue now can be dismissed, the row records its status and
// occurrence, and the queue then hides it.
func TestDismiss(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st}
	running := "running"
	for _, id := range []string{"s-1", "s-2"} {
		if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: id, Lifecycle: &running, HostID: "h-" + id}, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "s-1", To: "failed", Actor: transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
		t.Fatal(err)
	}
	fp := Fingerprint("session", "s-1", state.RunFailedExitNonzero)
	now := time.Now()
	for _, c := range []struct {
		name string
		r    Dismissing
		now  time.Time
		want error
	}{
		// Failure cases
		{"malformed", Dismissing{Fingerprint: "s-1"}, now, ErrBadFingerprint},
		{"no such entity", Dismissing{Fingerprint: "session:nobody:run.failed.exit_nonzero"}, now, ErrNoItem},
		{"no such reason on it", Dismissing{Fingerprint: "session:s-1:run.health.stalled"}, now, ErrNoItem},
		{"a healthy entity", Dismissing{Fingerprint: "session:s-2:run.failed.exit_nonzero"}, now, ErrNoItem},
		{"aged out of the window", Dismissing{Fingerprint: fp}, now.Add(DefaultFailureWindow + time.Hour), ErrNoItem},
		// Success
		{"snooze", Dismissing{Fingerprint: fp, Until: now.Add(time.Hour), ClearOnStatusChange: true, By: "operator"}, now, nil},
	} {
		d, err := Dismiss(ctx, st, c.r, c.now, 0)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
			continue
		}
		if c.want != nil {
			if errors.Is(c.want, ErrNoItem) && err.Error() != `no attention item has fingerprint "`+c.r.Fingerprint+`" (it may have cleared or aged out)` {
				t.Errorf("%s: sentence %q", c.name, err)
			}
			continue
		}
		if d.StatusAtDismissal != "failed" || d.EntityID != "s-1" || d.ReasonCode != string(state.RunFailedExitNonzero) || d.Occurrence.IsZero() || !d.SnoozedUntil.Equal(c.r.Until) {
			t.Errorf("%s: row %+v", c.name, d)
		}
	}
	q, err := Read(ctx, st, Query{}, now)
	if err != nil || q.Total != 0 {
		t.Errorf("queue after the snooze: %+v %v", q, err)
	}
	ds, err := st.Dismissals(ctx)
	if err != nil || len(ds) != 1 || ds[fp].DismissedBy != "operator" {
		t.Errorf("dismissals %+v %v", ds, err)
	}
}

// TestBuildKeepsOneHost: Query.Host keeps the items of that host's
// entities, as the live view's queue does.
func TestBuildKeepsOneHost(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	failed := "failed"
	reason := &state.StateReason{Code: state.RunFailedExitNonzero}
	var entities []store.Entity
	for _, h := range []string{"h1", "h2", ""} {
		entities = append(entities, store.Entity{Type: "session", ID: "on-" + h, HostID: h, Lifecycle: &failed, Terminal: true, TransitionReason: reason, EndedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute)})
	}
	for _, c := range []struct {
		host string
		want []string
	}{
		{"", []string{"on-", "on-h1", "on-h2"}},
		{"h2", []string{"on-h2"}},
		{"h9", nil},
	} {
		q := Build(entities, nil, Query{Host: c.host}, now)
		var got []string
		for _, it := range q.Items {
			got = append(got, it.Entity.ID)
		}
		if len(got) != len(c.want) || q.Total != len(c.want) {
			t.Errorf("host %q: %v, want %v", c.host, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("host %q: %v, want %v", c.host, got, c.want)
			}
		}
	}
}
