package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// throughputClients is the number of concurrent loopback clients issue 13
// sets the transition endpoint's target for (5,000/s).
const throughputClients = 8

// BenchmarkTransitionThroughput is the write-throughput figure of issue
// 13: throughputClients goroutines, each with its own http.Client (its own
// keep-alive connection), POST valid transitions as fast as they can to
// the real handler on a real 127.0.0.1 listener over a real SQLite file
// (synchronous=FULL). Each client moves its own agents between idle and
// busy, so every request is a real transition with its compare-and-set
// and audit row; b.N is the total across clients, and transitions/s is
// what the daemon sustains.
func BenchmarkTransitionThroughput(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "watchdog.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st}
	// Several agents per client, so a client's next request is not
	// always on the row it just wrote.
	const agentsPerClient = 4
	idle := "idle"
	for c := range throughputClients {
		for a := range agentsPerClient {
			if _, err := w.Register(ctx, transitions.Registration{
				Entity: store.Entity{Type: "agent", ID: fmt.Sprintf("c%d-a%d", c, a), Lifecycle: &idle}, Actor: transitions.ActorOrchestrator,
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: New(Options{Store: st, Writer: w}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/api/v1/entities/agent/"

	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	for c := range throughputClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 60 * time.Second}
			defer client.CloseIdleConnections()
			busy := make([]bool, agentsPerClient)
			for i := 0; left.Add(-1) >= 0; i++ {
				a := i % agentsPerClient
				from, to := "idle", "busy"
				if busy[a] {
					from, to = to, from
				}
				body := `{"to":"` + to + `","expect_from":"` + from + `","trigger":"prompt_received"}`
				resp, err := client.Post(fmt.Sprintf("%sc%d-a%d/transitions", base, c, a), "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("client %d: %s -> %s: status %d", c, from, to, resp.StatusCode)
					return
				}
				busy[a] = !busy[a]
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "transitions/s")
}
