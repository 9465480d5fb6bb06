package live

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/sqlite"
)

// memHosts are the hosts of a fleet's store: machine ids, as the daemon
// records them.
var memHosts = []string{"3f9a1c0d2b7e4f6a8c1d2e3f4a5b6c7d", "a1b2c3d4e5f60718293a4b5c6d7e8f90", "0c0ffee0deadbeef0badf00d12345678"}

// memInsert fills st with n open sessions as a host full of agents holds
// them, straight through SQL in one transaction (the write path would
// take minutes at 100,000 and store the same rows): a pid and its start,
// a host and a boot id, a heartbeat file, a stalled one in ten with a
// finding and its evidence, one in five with an artifact contract and
// metadata, one in twenty with two findings. With unknown, every session
// is instead as the bench registers it (scripts/bench.sh's memory part):
// no pid, so each holds one finding, run.health.liveness_unknown, with
// one piece of evidence fetched when it was first seen.
func memInsert(tb testing.TB, st *sqlite.Store, n int, unknown bool) {
	tb.Helper()
	ctx := context.Background()
	tx, err := testenv.SQL(tb, st.Path()).BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO entities (type, id, label, lifecycle, terminal, health, delivery,
		reasons, health_since, host_id, boot_id, pid, pid_start_time, pid_start_ticks, heartbeat_file, heartbeat_at,
		artifacts_root, artifacts, metadata, started_at, lifecycle_at, created_at, updated_at)
		VALUES (?, ?, ?, 'running', 0, ?, 'unknown', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		tb.Fatal(err)
	}
	defer ins.Close()
	now := float64(testNow.Unix())
	stalled := `[{"code":"run.health.stalled","message":"no heartbeat since {since}","claim_status":"observed","confidence":1,"evidence":[{"kind":"tool_result","path":"/run/agents/%d/heartbeat","detail":"heartbeat file not modified"}],"since":%d,"first_seen":%d}]`
	two := `[{"code":"run.health.stalled","message":"no heartbeat since {since}","claim_status":"observed","confidence":1,"evidence":[{"kind":"tool_result","path":"/run/agents/%d/heartbeat","detail":"heartbeat file not modified"}],"since":%d,"first_seen":%d},` +
		`{"code":"artifact.missing","message":"required artifact out/report.md is missing","claim_status":"observed","confidence":1,"evidence":[{"kind":"artifact","path":"out/report.md"}],"first_seen":%d}]`
	liveness := `[{"code":"run.health.liveness_unknown","message":"liveness could not be decided: no pid recorded yet","claim_status":"observed","confidence":1,"evidence":[{"kind":"tool_result","detail":"no pid recorded yet","fetched_at":%d}],"first_seen_at":%d}]`
	arts := `[{"path":"out/report.md","required":true,"min_bytes":1,"kind":"report"},{"path":"out/patch.diff","required":false}]`
	for i := 0; i < n; i++ {
		health, reasons, since := "running", "[]", any(nil)
		switch {
		case i%20 == 0:
			health, reasons, since = "stalled", fmt.Sprintf(two, i, int(now)-4000, int(now)-3000, int(now)-3000), now-3000
		case i%10 == 1:
			health, reasons, since = "stalled", fmt.Sprintf(stalled, i, int(now)-4000, int(now)-3000), now-3000
		}
		root, artifacts, metadata := "", "[]", "{}"
		if i%5 == 2 {
			root, artifacts = fmt.Sprintf("/srv/work/%d", i), arts
			metadata = fmt.Sprintf(`{"repo":"example/app","pr":%d,"model":"large"}`, i%5000)
		}
		host := memHosts[i%len(memHosts)]
		pid, pidStart, ticks, hbFile, hbAt := any(10000+i), any(now-7000), any(123456+i), fmt.Sprintf("/run/agents/%d/heartbeat", i), any(now-float64(i%600))
		if unknown {
			seen := int(now) - 7000 + i%60
			health, reasons, since = "unknown", fmt.Sprintf(liveness, seen, seen), now-7000
			pid, pidStart, ticks, hbFile, hbAt = nil, nil, nil, "", nil
			root, artifacts, metadata = "", "[]", "{}"
		}
		if _, err := ins.ExecContext(ctx, "session", fmt.Sprintf("sess-%08d", i), fmt.Sprintf("reviewer for PR %d", i%5000),
			health, reasons, since, host, "6a1f4e2c-9b3d-4c5e-8f70-1a2b3c4d5e6f", pid, pidStart, ticks,
			hbFile, hbAt, root, artifacts, metadata,
			now-7000, now-7000, now-7000, now-float64(i%3600)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// memStore is a store in the test's directory filled with memInsert's n
// sessions, closed with the test.
func memStore(tb testing.TB, n int, unknown bool) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "watchdog.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	memInsert(tb, st, n, unknown)
	return st
}

// loadView is a view of st at testNow, loaded.
func loadView(tb testing.TB, st *sqlite.Store) *View {
	tb.Helper()
	v := New(st, func() time.Time { return testNow }, 0)
	if err := v.Load(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return v
}

// viewHeap, when set, is where BenchmarkViewMemory writes a heap profile
// taken with the view loaded (PATH.N for N entities): -memprofile's is
// taken after the benchmark, when the view is gone.
var viewHeap = flag.String("viewheap", "", "write a heap profile with the view loaded to `PATH`.N")

func writeHeapProfile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		tb.Fatal(err)
	}
}

// heapInuse is the heap in use after two collections: what the live
// objects hold.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkViewMemory loads 10,000 and 100,000 open sessions (memInsert)
// into a view over a real SQLite store and reports the heap the view
// holds per entity (HeapInuse after GC, with the view loaded, less
// before it was made), then times a read of the queue's first page.
// Run it with -benchtime=1x: the figure is the load's, not a loop's;
// -memprofile shows what holds it. The liveness_unknown case is the
// bench's 10,000 sessions (memInsert's unknown): a finding on every one.
func BenchmarkViewMemory(b *testing.B) {
	for _, c := range []struct {
		n       int
		unknown bool
	}{{10_000, false}, {100_000, false}, {10_000, true}} {
		n := c.n
		name := fmt.Sprintf("entities=%d", n)
		if c.unknown {
			name += ",liveness_unknown"
		}
		b.Run(name, func(b *testing.B) {
			st := memStore(b, n, c.unknown)
			before := heapInuse()
			v := loadView(b, st)
			after := heapInuse()
			if *viewHeap != "" {
				writeHeapProfile(b, fmt.Sprintf("%s.%s", *viewHeap, strings.TrimPrefix(name, "entities=")))
			}
			if v.Len() != n {
				b.Fatalf("view holds %d entities, inserted %d", v.Len(), n)
			}
			perEntity := float64(int64(after)-int64(before)) / float64(n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if q := v.Attention(attention.Query{}, testNow); q.Total == 0 && !c.unknown { // a liveness_unknown is no item
					b.Fatal("empty queue")
				}
			}
			b.StopTimer()
			// After the loop: ResetTimer clears reported metrics.
			b.ReportMetric(perEntity, "heap-B/entity")
			runtime.KeepAlive(v)
		})
	}
}

// BenchmarkRecordCPU times what the compact record costs the view's apply
// (interning and newRecord, as View.apply does them, for every entity of
// memInsert's 10,000) and its readers (Get and Each, which rebuild each
// entity and its state): per entity, with and without a finding on every
// one. Compare two binaries side by side: the figures are the ratios.
func BenchmarkRecordCPU(b *testing.B) {
	for _, unknown := range []bool{false, true} {
		const n = 10_000
		v := loadView(b, memStore(b, n, unknown))
		stored := make([]store.Entity, 0, n)
		v.Each("", func(e *Entry) { stored = append(stored, e.Entity) })
		name := "mixed"
		if unknown {
			name = "liveness_unknown"
		}
		b.Run("apply/"+name, func(b *testing.B) {
			words := newInterner()
			for i := 0; i < b.N; i++ {
				for j := range stored {
					e := stored[j]
					e.Reasons = slices.Clone(e.Reasons)
					words.entity(&e)
					newRecord(&e, testNow)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
		})
		b.Run("get/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for j := range stored {
					if _, ok := v.Get(stored[j].Type, stored[j].ID, testNow); !ok {
						b.Fatal("not found")
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
		})
		b.Run("each/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				m := 0
				v.Each("", func(*Entry) { m++ })
				if m != n {
					b.Fatalf("each saw %d", m)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
		})
	}
}

// BenchmarkCompact loads memInsert's sessions into a view, writes every
// second one again (a second version, as the monitor's first judgement
// of a registered entity makes one: the first records of those become
// holes among the others'), and then repacks the view (compact.go). It
// reports the heap in use per entity before and after the repacking
// (HeapInuse after two collections, less before the view was made) and
// times one Compact of every record (in chunks of compactChunk, a hold
// of the view's lock each). Run it with -benchtime=1x for the heap
// figures of one repacking.
func BenchmarkCompact(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st := memStore(b, n, true)
			base := heapInuse()
			v := loadView(b, st)
			if _, err := testenv.SQL(b, st.Path()).ExecContext(ctx, `UPDATE entities SET updated_at = updated_at + 1, revision = revision + 1000000 WHERE rowid % 2 = 0`); err != nil {
				b.Fatal(err)
			}
			if err := v.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			scattered := heapInuse()
			if moved := v.compact(compactLeast); moved != n {
				b.Fatalf("Compact moved %d of %d records", moved, n)
			}
			packed := heapInuse()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v.mu.Lock()
				v.dead = n // as if every record changed since
				v.mu.Unlock()
				v.compact(compactLeast)
			}
			b.StopTimer()
			per := func(h uint64) float64 { return float64(int64(h)-int64(base)) / float64(n) }
			b.ReportMetric(per(scattered), "scattered-B/entity")
			b.ReportMetric(per(packed), "packed-B/entity")
			runtime.KeepAlive(v)
		})
	}
}
