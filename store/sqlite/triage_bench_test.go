package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"watchdog/store"
)

// BenchmarkTriageCluster is a cluster of 100 snoozed: one UpsertDismissals
// (one transaction, 100 rows and 100 triage log rows) against 100
// UpsertDismissal calls, one transaction each, as the page's per-item
// Snooze made an operator do. Compare the two ns/op side by side in one
// run: the ratio, not the absolute time, is the result.
func BenchmarkTriageCluster(b *testing.B) {
	const n = 100
	ds := make([]store.Dismissal, n)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range ds {
		id := fmt.Sprintf("s-%d", i)
		ds[i] = store.Dismissal{Fingerprint: "session:" + id + ":run.health.stalled", EntityType: "session", EntityID: id,
			ReasonCode: "run.health.stalled", StatusAtDismissal: "running", SnoozedUntil: t0.Add(4 * time.Hour), DismissedAt: t0,
			DismissedBy: "operator", ClearOnStatusChange: true, Occurrence: t0}
	}
	for _, mode := range []string{"one-batch", "one-by-one"} {
		b.Run(mode, func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), "w.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			for b.Loop() {
				if mode == "one-batch" {
					if _, err := s.UpsertDismissals(ctx, ds); err != nil {
						b.Fatal(err)
					}
					continue
				}
				for _, d := range ds {
					if err := s.UpsertDismissal(ctx, d); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
