package reaper

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/judge"
	"watchdog/monitor"
	"watchdog/pidwatch"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// toldFiles records, by heartbeat file, the mtime each probe was told
// (Subject.HeartbeatFileKnown, read with no stat); absent: it stats.
type toldFiles struct {
	Prober
	told map[string]time.Time
}

func (s *toldFiles) Probe(ctx context.Context, t probe.Subject, now time.Time) probe.Observations {
	delete(s.told, t.HeartbeatFile)
	if t.HeartbeatFileKnown {
		s.told[t.HeartbeatFile] = t.HeartbeatFileAt
	}
	return s.Prober.Probe(ctx, t, now)
}

// noSteps stands in for the monitor's reaper steps: only its watch of the
// heartbeat files is under test here.
type noSteps struct{}

func (noSteps) Observe(context.Context, store.Entity, judge.Event) (bool, error) {
	return false, nil
}

func (noSteps) EnforceEntity(context.Context, store.Entity, judge.Event) (bool, error) {
	return false, nil
}

func (noSteps) ReapPhantomEntity(context.Context, store.Entity) (bool, error) { return false, nil }

func (noSteps) CheckScheduleEntity(context.Context, store.Entity) (bool, error) { return false, nil }

// TestSweepStatsAWatchedFileOnlyWhenChanged: a real monitor watches a real
// heartbeat file's directory by inotify. The first sweep reads the file
// once; the next makes no stat (the probe is told its mtime, and nothing
// read it: watchdog_heartbeat_file_stats_skipped_total); a touch, then a
// removal, are each seen by the sweep once the monitor heard the event.
func TestSweepStatsAWatchedFileOnlyWhenChanged(t *testing.T) {
	f := newFixture(t)
	hb := filepath.Join(t.TempDir(), "s.hb")
	old := f.clock.Now().Add(-3 * time.Hour).Truncate(time.Second)
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(hb, old, old); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	f.clock.Advance(-2 * time.Hour) // registered 2 h ago: its heartbeat ages from then
	f.register(store.Entity{Type: "session", ID: "s", PID: sleep.Process.Pid, HeartbeatFile: hb})
	f.clock.Advance(2 * time.Hour)

	// No step of the monitor's own runs meanwhile (one running would make
	// HeartbeatFileAt answer nothing): judged running, polled hourly.
	mon := monitor.New(monitor.Options{Reaper: noSteps{}, HostID: f.r.HostID, Now: f.clock.Now,
		Settings: monitor.Settings{PollInterval: time.Hour}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mon.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e := f.get("session", "s")
	e.Health = state.HealthRunning
	mon.Update(e)
	testenv.Eventually(t, "the heartbeat file watched", ceiling, func() (bool, string) {
		w, p := mon.HeartbeatFiles()
		return w == 1, fmt.Sprintf("%d watched, %d polled", w, p)
	})
	f.r.WatchedFile = mon.HeartbeatFileAt
	rec := &toldFiles{Prober: f.r.Prober, told: map[string]time.Time{}}
	f.r.Prober = rec

	f.sweep()
	if at, ok := rec.told[hb]; !ok || !at.Equal(old) || mon.HeartbeatFileStatsSkipped() != 0 {
		t.Fatalf("first sweep: told %v (%v), %d stats skipped; want the file's mtime %v, read once", at, ok, mon.HeartbeatFileStatsSkipped(), old)
	}
	if h := f.get("session", "s").Health; h != state.HealthStalled {
		t.Errorf("no heartbeat for 2 h: %s, want stalled", h)
	}
	f.sweep()
	if at, ok := rec.told[hb]; !ok || !at.Equal(old) || mon.HeartbeatFileStatsSkipped() != 1 {
		t.Fatalf("second sweep: told %v (%v), %d stats skipped; want the same mtime and no stat", at, ok, mon.HeartbeatFileStatsSkipped())
	}

	fresh := f.clock.Now().Add(-time.Minute).Truncate(time.Second)
	if err := os.Chtimes(hb, fresh, fresh); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the touch seen by the sweep", ceiling, func() (bool, string) {
		f.sweep()
		return rec.told[hb].Equal(fresh), fmt.Sprint(rec.told[hb])
	})
	if h := f.get("session", "s").Health; h != state.HealthRunning {
		t.Errorf("touched a minute ago: %s, want running", h)
	}

	if err := os.Remove(hb); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the removal seen by the sweep", ceiling, func() (bool, string) {
		f.sweep()
		at, ok := rec.told[hb]
		return ok && at.IsZero(), fmt.Sprint(at, ok)
	})
}

// BenchmarkSweepUnchangedAsServed is BenchmarkSweepUnchanged with the
// daemon's hooks wired as it wires them: a real monitor watching the
// heartbeat files by inotify (WatchedFile) and the live processes by pidfd
// (Watched), its own steps stubbed out.
func BenchmarkSweepUnchangedAsServed(b *testing.B) {
	for _, n := range benchNs() {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			r := benchHost(b, n)
			w, err := pidwatch.New()
			if err != nil {
				b.Skipf("pidfds: %v", err)
			}
			mon := monitor.New(monitor.Options{Reaper: noSteps{}, Watcher: w, Prober: r.Prober.(*probe.Host), HostID: r.HostID,
				Settings: monitor.Settings{PollInterval: time.Hour}})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = mon.Run(ctx) }()
			b.Cleanup(func() { cancel(); <-done; _ = w.Close() })
			open, err := r.Store.List(ctx, store.Filter{HostID: r.HostID, OpenOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range open {
				mon.Update(e)
			}
			want := min(n, monitor.MaxFileDirs)
			deadline := time.Now().Add(time.Minute)
			for watched, _ := mon.HeartbeatFiles(); watched < want; watched, _ = mon.HeartbeatFiles() {
				if time.Now().After(deadline) {
					b.Fatalf("%d heartbeat files watched, want %d", watched, want)
				}
				time.Sleep(10 * time.Millisecond)
			}
			r.Watched = func(e *store.Entity) bool { return w.Alive(monitor.Key(e.Type, e.ID), e.PID) }
			r.WatchedFile = mon.HeartbeatFileAt
			if _, err := r.Sweep(ctx); err != nil { // the files' first reads
				b.Fatal(err)
			}
			sweepUnchanged(b, r, n)
			b.ReportMetric(float64(mon.HeartbeatFileStatsSkipped())/float64(b.N*n), "stats-skipped/entity")
		})
	}
}
