package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"watchdog/config"
	"watchdog/internal/cronspec"
	"watchdog/live"
	"watchdog/reaper"
	"watchdog/store/sqlite"
)

// TestReloadPostponedWhileAJobIsStuck: a reload waits for running jobs
// before their settings change, but not forever: with a job stuck (a hung
// file system, say) it keeps the running config, says so, and returns, so
// the main loop still hears SIGTERM. The schedule goes on.
//
// It runs in a synctest bubble: the "@every 1s" schedule, the wait for the
// job and reloadJobWait are all in-process timers, so fake time makes the
// test as quick as the code and immune to a slow machine.
func TestReloadPostponedWhileAJobIsStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer func(w time.Duration) { reloadJobWait = w }(reloadJobWait)
		reloadJobWait = 100 * time.Millisecond

		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		core, logs := observer.New(zap.InfoLevel)
		cfg := config.Default()
		d := &daemon{cfg: cfg, st: st, view: live.New(st, nil, 0), log: zap.New(core), rp: &reaper.Reaper{}, notify: &notifier{log: zap.NewNop()}}

		// Buffered: the job may get here before the test waits on it.
		entered := make(chan struct{}, 1)
		release := make(chan struct{})
		stuck := Job{Name: "sweep", Spec: "@every 1s", Run: func(context.Context) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
			return nil
		}}
		sched, err := NewScheduler(context.Background(), cronspec.Parser, []Job{stuck}, zap.NewNop(), nil)
		if err != nil {
			t.Fatal(err)
		}
		d.sched = sched
		sched.Start()
		select {
		case <-entered:
		case <-time.After(ceiling):
			t.Fatalf("the job did not start within %s", ceiling)
		}

		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("thresholds:\n  failure_window: 2h\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		d.reload(context.Background(), path, "")
		if logs.FilterMessageSnippet("reload postponed").Len() != 1 {
			t.Errorf("no postponement logged: %v", logs.All())
		}
		if got := d.cfg.Thresholds.FailureWindow; got != cfg.Thresholds.FailureWindow || d.cfg != cfg {
			t.Errorf("a postponed reload changed the config: failure_window %v", got)
		}
		close(release)
		if !d.sched.StopWithin(time.Minute) {
			t.Error("the scheduler did not stop once the job returned")
		}
	})
}
