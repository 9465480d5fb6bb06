package reaper

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// benchStore is a fresh SQLite store in its own directory, with this
// host and the write path over it.
func benchStore(b *testing.B) (string, *sqlite.Store, *probe.Host, *transitions.Writer) {
	b.Helper()
	dir := b.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "w.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	host := probe.NewHost()
	return dir, st, host, &transitions.Writer{Store: st, Now: time.Now, Ident: host}
}

// benchHost registers n running sessions (a few real live processes, the
// rest dead pids), each with a heartbeat file and two artifacts, and sweeps
// once so that the store holds what the probe finds.
func benchHost(b *testing.B, n int) *Reaper {
	b.Helper()
	dir, st, host, w := benchStore(b)
	live := min(n/10, 200)
	var pids []int
	for range live {
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		root := filepath.Join(dir, "runs", strconv.Itoa(i))
		if err := os.MkdirAll(root, 0o755); err != nil {
			b.Fatal(err)
		}
		hb := filepath.Join(root, "hb")
		for _, f := range []string{hb, filepath.Join(root, "a.md"), filepath.Join(root, "b.json")} {
			if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		pid := dead.Process.Pid
		if i < live {
			pid = pids[i]
		}
		lc := "running"
		e := store.Entity{Type: "session", ID: fmt.Sprintf("s-%d", i), Lifecycle: &lc, PID: pid, HeartbeatFile: hb,
			ArtifactsRoot: root, Artifacts: []state.ArtifactSpec{
				{Path: "a.md", Required: true, MinBytes: 1, Kind: state.ArtifactFile},
				{Path: "b.json", Required: true, Kind: state.ArtifactJSON},
			}}
		if _, err := w.Register(context.Background(), transitions.Registration{Entity: e, Actor: transitions.ActorOrchestrator}); err != nil {
			b.Fatal(err)
		}
	}
	r := &Reaper{Store: st, Writer: w, Prober: host, HostID: host.HostID(), Settings: DefaultSettings}
	r.Settings.SweepBudget = time.Hour
	if _, err := r.Sweep(context.Background()); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkSweepUnchanged is a whole daemon sweep over a host where
// nothing changed since the last one: the store read, a probe of every
// entity, and no write at all (it fails if one happens). cpu-ns/entity is
// the process's CPU time (user and system, the collector's included), what
// a sweep costs the host whatever else runs on it.
func BenchmarkSweepUnchanged(b *testing.B) {
	for _, n := range benchNs() {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			sweepUnchanged(b, benchHost(b, n), n)
		})
	}
}

// sweepUnchanged times r's sweeps of a host of n where nothing changes,
// failing if one writes, and reports wall and CPU time per entity.
func sweepUnchanged(b *testing.B, r *Reaper, n int) {
	b.Helper()
	cpu := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		rep, err := r.Sweep(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if rep.Written != 0 || rep.Checked != n {
			b.Fatalf("an unchanged sweep checked %d and wrote %d", rep.Checked, rep.Written)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
	b.ReportMetric(float64((cpuTime(b)-cpu).Nanoseconds())/float64(b.N*n), "cpu-ns/entity")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSweepStoreRead is the store read a sweep makes (the open
// entities of this host), reported apart from the probing: whole, as
// before ADR-0052's pages, and a page at a time as the sweep reads now
// (what a page costs beside one query: the ratio of the two).
func BenchmarkSweepStoreRead(b *testing.B) {
	for _, n := range benchNs() {
		r := benchHost(b, n)
		b.Run("N="+strconv.Itoa(n)+"/whole", func(b *testing.B) {
			for b.Loop() {
				list, err := r.openOnHost(context.Background())
				if err != nil || len(list) != n {
					b.Fatalf("%d entities, %v", len(list), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
		})
		b.Run("N="+strconv.Itoa(n)+"/pages", func(b *testing.B) {
			for b.Loop() {
				p, got := r.pages(store.Filter{HostID: r.HostID, OpenOnly: true, AlsoHostless: r.leads()}), 0
				for {
					list, err := p.next(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					if len(list) == 0 {
						break
					}
					got += len(list)
				}
				if got != n {
					b.Fatalf("%d entities", got)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
		})
	}
}

// benchNs are the host sizes the sweep benchmarks run (WATCHDOG_BENCH_N
// narrows them to one, for a profile).
func benchNs() []int {
	if n, err := strconv.Atoi(os.Getenv("WATCHDOG_BENCH_N")); err == nil && n > 0 {
		return []int{n}
	}
	return []int{1000, 10000}
}
