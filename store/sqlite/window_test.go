package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/sqlite"
)

// The store's SQL applies attention.AgedOut's rule with attention.Since as
// its parameter: AttentionCandidates keeps every ended entity that is not
// aged out.
func TestFailureWindowSQLFollowsAgedOut(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := unixtime.FromSeconds(100_000)
	window := time.Hour
	cases := []struct{ ended, at float64 }{
		{99_000, 1}, {96_400, 1}, {96_399.999999, 1}, {96_399, 99_999}, // ended_at decides
		{0, 99_000}, {0, 96_400}, {0, 96_399.999999}, // no ended_at: lifecycle_at (the registration) does
	}
	want := map[string]bool{}
	for i, c := range cases {
		failed := "failed"
		id := fmt.Sprintf("e%d", i)
		e := store.Entity{Type: "session", ID: id, Lifecycle: &failed, Terminal: true, EndedAt: unixtime.FromSeconds(c.ended)}
		at := unixtime.FromSeconds(c.at)
		if _, err := s.Register(ctx, e, "orchestrator", at); err != nil {
			t.Fatal(err)
		}
		want[id] = !attention.AgedOut("failed", "", e.EndedAt, at, at, now, window)
	}
	since := attention.Since(now, window)
	list, err := s.AttentionCandidates(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range list {
		got[e.ID] = true
	}
	for id, keep := range want {
		if keep && !got[id] {
			t.Errorf("AttentionCandidates left out %s, which AgedOut keeps", id)
		}
	}
}
