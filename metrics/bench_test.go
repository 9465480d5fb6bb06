package metrics

import (
	"context"
	"fmt"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/store/sqlite"
)

// bulkInsert fills the store with n entities in one transaction, straight
// through SQL: a realistic mix of open, stalled, ended and failed work of
// several types, with reasons where the probe or the write path would have
// put them. Registration through the write path would take minutes at
// 100,000 rows and measure nothing the scrape depends on.
func bulkInsert(tb testing.TB, st *sqlite.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	tx, err := testenv.SQL(tb, st.Path()).BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO entities (type, id, label, lifecycle, terminal, health, delivery,
		reasons, transition_reason, ended_at, lifecycle_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		tb.Fatal(err)
	}
	defer ins.Close()
	types := []string{"session", "invocation", "subagent", "turn"}
	now := float64(testNow.Unix())
	stalled := `[{"code":"run.health.stalled","message":"no heartbeat for 71m","claim_status":"observed","confidence":1,"evidence":[{"kind":"tool_result","detail":"last heartbeat 71m ago"}]}]`
	failed := `{"code":"run.failed.exit_nonzero","message":"exit 3","claim_status":"observed","confidence":1,"evidence":[{"kind":"tool_result","detail":"exit code 3"}]}`
	for i := 0; i < n; i++ {
		typ := types[i%len(types)]
		var (
			lifecycle     any = "running"
			terminal          = 0
			health            = "running"
			delivery          = "not_expected"
			reasons           = "[]"
			transition    any
			ended, lcAt   any = nil, now - 3600
			created, upAt     = now - 7200, now - float64(i%3600)
		)
		switch i % 20 {
		case 0, 1: // stalled
			health, reasons = "stalled", stalled
		case 2, 3, 4, 5, 6, 7: // ended fine
			lifecycle, terminal, health, ended = "completed", 1, "ok", now-float64(i%100000)
		case 8: // failed, some within the window, most long ago
			lifecycle, terminal, health, transition, ended = "failed", 1, "ok", failed, now-float64(i%200000)
		case 9:
			lifecycle = nil // legacy
		}
		if _, err := ins.ExecContext(ctx, typ, fmt.Sprintf("e-%07d", i), "bench", lifecycle, terminal, health, delivery,
			reasons, transition, ended, lcAt, created, upAt); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkScrape is one full /metrics gather (the store collector's query
// and every gauge, plus the Go and process collectors) over a store of
// 10,000 and 100,000 entities.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			st := openStore(b)
			bulkInsert(b, st, n)
			_, reg := newMetrics(b, st)
			// The first scrape loads the live view (the daemon loads it
			// before it serves); the benchmark is the scrapes after.
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mfs, err := reg.Gather()
				if err != nil || len(mfs) == 0 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scrape")
		})
	}
}

// TestBulkInsertScrapes keeps the benchmark's fixture honest: the scrape
// sees every inserted row.
func TestBulkInsertScrapes(t *testing.T) {
	st := openStore(t)
	bulkInsert(t, st, 1000)
	_, reg := newMetrics(t, st)
	mfs := gather(t, reg)
	total := mfs["watchdog_legacy_entities"].GetMetric()[0].GetGauge().GetValue()
	for _, m := range mfs["watchdog_entities"].GetMetric() {
		total += m.GetGauge().GetValue()
	}
	if total != 1000 {
		t.Errorf("scrape counts %v entities, inserted 1000", total)
	}
	if v := mfs["watchdog_scrape_collector_success"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("collector success = %v", v)
	}
}

// BenchmarkScrapeAfterWrite is BenchmarkScrape with one entity written by
// another connection (a CLI stand-in) before each scrape, outside the
// timer: every timed scrape pays the Sync that reads the change and the
// view's upkeep of it, the cost of a scrape on a host that is not idle.
// The written entity is a stalled one, with a code and an item, so the
// change moves the queue's order and the reasons' counts.
func BenchmarkScrapeAfterWrite(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			st := openStore(b)
			bulkInsert(b, st, n)
			db := testenv.SQL(b, st.Path())
			_, reg := newMetrics(b, st)
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// Entities 0 and 1 of every 20 are stalled (bulkInsert).
				id := fmt.Sprintf("e-%07d", (i*20)%n)
				if _, err := db.Exec(`UPDATE entities SET updated_at = updated_at + 1 WHERE id = ?`, id); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				mfs, err := reg.Gather()
				if err != nil || len(mfs) == 0 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scrape")
		})
	}
}
