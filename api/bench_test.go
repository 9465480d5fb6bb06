package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// BenchmarkTransitionEndpoint measures POST …/transitions end to end on a
// real loopback listener: HTTP parsing, strict decoding, the validated
// compare-and-set write with its audit row in SQLite (synchronous=FULL),
// and the JSON answer. Parallel clients each move their own agent between
// idle and busy, so every request is a real, valid transition; writes
// serialise on the store, so this is the daemon's write throughput.
func BenchmarkTransitionEndpoint(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "watchdog.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: New(Options{Store: st, Writer: w}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}

	var next atomic.Int64
	b.SetParallelism(4) // 8 clients on the 2-core box this was written on
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprintf("a-%d", next.Add(1))
		idle := "idle"
		if _, err := w.Register(context.Background(), transitions.Registration{
			Entity: store.Entity{Type: "agent", ID: id, Lifecycle: &idle}, Actor: transitions.ActorOrchestrator,
		}); err != nil {
			b.Error(err)
			return
		}
		url := base + "/api/v1/entities/agent/" + id + "/transitions"
		to, from := "busy", "idle"
		for pb.Next() {
			body := `{"to":"` + to + `","expect_from":"` + from + `","trigger":"prompt_received"}`
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			to, from = from, to
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "transitions/s")
}

// BenchmarkAttentionEndpoint measures GET /api/attention over a store of
// 10,000 and 100,000 entities shaped like a busy host's history: 2% open
// with a finding, 8% failed within the failure window, the rest ended
// long ago (which the queue's store filter never decodes). The queue then
// holds a tenth of the entities (10,000 items at 100,000), reported as
// items; a request answers the first page of 50 and counts them all.
func BenchmarkAttentionEndpoint(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			e, items := attentionFixture(b, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := e.do("GET", "/api/attention", "")
				if r.status != 200 {
					b.Fatal(r.status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/request")
			b.ReportMetric(float64(items), "items")
		})
	}
}

// BenchmarkAttentionAfterWrite is BenchmarkAttentionEndpoint with one
// entity written by another connection (a CLI stand-in) before each
// request, outside the timer: every timed request pays the Sync that reads
// the change and the view's upkeep of the queue's order, so nothing it
// answers was computed before the change.
func BenchmarkAttentionAfterWrite(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("entities=%d", n), func(b *testing.B) {
			e, items := attentionFixture(b, n)
			db := testenv.SQL(b, e.st.Path())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				// Every 50th entity is open and stalled: its item moves to
				// the head of its severity in the queue's order.
				if _, err := db.Exec(`UPDATE entities SET updated_at = ? WHERE id = ?`,
					e.seconds()+float64(i), fmt.Sprintf("s-%07d", (i*50)%n)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				r := e.do("GET", "/api/attention", "")
				if r.status != 200 {
					b.Fatal(r.status)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/request")
			b.ReportMetric(float64(items), "items")
		})
	}
}

// attentionFixture fills a store of n entities for the attention
// benchmarks, loads the daemon's view with a first request (the daemon's
// view is loaded before it serves) and returns the queue's size.
func attentionFixture(b *testing.B, n int) (*env, int) {
	e := newEnv(b)
	now := e.seconds()
	ctx := context.Background()
	tx, err := testenv.SQL(b, e.st.Path()).BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO entities (type, id, lifecycle, terminal, health, delivery, reasons,
		transition_reason, ended_at, lifecycle_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	stalled := `[{"code":"run.health.stalled","message":"no heartbeat for 71m","claim_status":"observed","confidence":1,"evidence":[]}]`
	failed := `{"code":"run.failed.exit_nonzero","message":"exit 3","claim_status":"observed","confidence":1,"evidence":[]}`
	for i := 0; i < n; i++ {
		lifecycle, terminal, health, reasons, transition, ended := "completed", 1, "ok", "[]", any(nil), now-30*86400
		switch {
		case i%50 == 0:
			lifecycle, terminal, health, reasons, ended = "running", 0, "stalled", stalled, 0
		case i%50 < 5:
			lifecycle, transition, ended = "failed", failed, now-float64(i%80000)
		}
		var endedAt any
		if ended != 0 {
			endedAt = ended
		}
		if _, err := ins.ExecContext(ctx, "session", fmt.Sprintf("s-%07d", i), lifecycle, terminal, health, "not_expected",
			reasons, transition, endedAt, now-86400*40, now-86400*40, now-float64(i%3600)); err != nil {
			b.Fatal(err)
		}
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	r := e.do("GET", "/api/attention?limit=1", "")
	if r.status != 200 {
		b.Fatal(r.status)
	}
	var q struct{ Total int }
	if err := json.Unmarshal(r.body, &q); err != nil {
		b.Fatal(err)
	}
	return e, q.Total
}
