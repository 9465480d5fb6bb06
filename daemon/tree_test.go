package daemon

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"watchdog/config"
	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// TestDaemonFindsALeftoverAtTheRootsDeath: a real daemon (sweeps an hour
// apart, so only its events can tell), a session registered on a shell
// that starts sleep in the background and then exits 3. At the shell's
// death the daemon records its exit status and the sleep as the
// session's leftover, by pid and command, with the root's status in the
// message; the health stays process_dead. The test never reaps the shell
// before it ends, so the status can only have come from the process
// connector's exit event: a pidfd has none for a zombie.
func TestDaemonFindsALeftoverAtTheRootsDeath(t *testing.T) {
	if tr, err := proctree.New(proctree.Options{}); err != nil || tr.Mode() != proctree.ModeEvents {
		t.Skip("the process connector is not available here: the walk mode is tested in reaper")
	} else {
		tr.Close()
	}
	db := filepath.Join(t.TempDir(), "w.db")
	cfg := config.Default()
	cfg.Store.DSN = db
	cfg.Listen = "127.0.0.1:0"
	cfg.Jobs = config.Jobs{Sweep: "@every 1h", EnforceTerminal: "@every 1h", ReapPhantoms: "@every 1h", CheckSchedules: "@every 1h", Vacuum: "@every 1h"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: cfg, Log: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), Version: "test"})
	}() // its log shown when the test fails (a missed exit says why)
	defer func() {
		cancel()
		<-done
	}()

	sh := exec.Command("sh", "-c", "sleep 304 & read x; exit 3")
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })

	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st, Now: time.Now, Ident: probe.NewHost()}
	running := "running"
	if _, err := w.Register(context.Background(), transitions.Registration{
		Entity: store.Entity{Type: "session", ID: "s", Lifecycle: &running, PID: sh.Process.Pid}, Actor: transitions.ActorOrchestrator,
	}); err != nil {
		t.Fatal(err)
	}
	get := func() store.Entity {
		e, err := st.Get(context.Background(), "session", "s")
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// Judged running once the monitor watches it (pidfd and tree).
	testenv.Eventually(t, "the session judged running", ceiling, func() (bool, string) {
		e := get()
		return e.Health == state.HealthRunning, string(e.Health)
	})

	in.Close()
	// The death may be judged before its exit status is recorded (the
	// pidfd and the connector race): the finding first says "is gone",
	// then, judged again with the status, "exited with status 3".
	want := fmt.Sprintf("pid %d exited with status 3; 1 descendant still running (sleep)", sh.Process.Pid)
	var r state.StateReason
	testenv.Eventually(t, "the leftover finding with the exit status", ceiling, func() (bool, string) {
		e := get()
		for _, x := range e.Reasons {
			if x.Code == state.RunHealthLeftoverProcesses {
				r = x
				return x.Message == want, x.Message
			}
		}
		return false, fmt.Sprintf("%s %v", e.Health, e.Reasons)
	})
	if len(r.Evidence) != 1 {
		t.Fatalf("evidence %+v: want the one sleep", r.Evidence)
	}
	var sleep int
	if _, err := fmt.Sscanf(r.Evidence[0].Detail, "pid %d", &sleep); err != nil {
		t.Fatalf("evidence %q: %v", r.Evidence[0].Detail, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(sleep, syscall.SIGKILL) })
	if r.Message != want || !strings.Contains(r.Evidence[0].Detail, " sleep, started ") {
		t.Errorf("finding %q %q, want %q naming the sleep", r.Message, r.Evidence[0].Detail, want)
	}
	e := get()
	if e.Health != state.HealthProcessDead || e.Exit == nil || e.Exit.Code != 3 {
		t.Errorf("health %s, exit %+v: want process_dead, status 3", e.Health, e.Exit)
	}
}

// TestOpenTreeByProcessTree: process_tree picks the tree the daemon keeps:
// off none, walk one that never opens the connector, events the connector
// (filtered in the kernel) where this process may open it, else walks.
func TestOpenTreeByProcessTree(t *testing.T) {
	connector := false
	if tr, err := proctree.New(proctree.Options{}); err == nil {
		connector = tr.Mode() == proctree.ModeEvents
		tr.Close()
	}
	for _, tc := range []struct {
		mode string
		want proctree.Mode // "" for no tree
	}{
		{config.ProcessTreeOff, ""},
		{config.ProcessTreeWalk, proctree.ModeWalk},
		{config.ProcessTreeEvents, map[bool]proctree.Mode{true: proctree.ModeEvents, false: proctree.ModeWalk}[connector]},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			tr := openTree(tc.mode, zap.NewNop())
			if tr == nil {
				if tc.want != "" {
					t.Fatalf("no tree, want mode %s", tc.want)
				}
				return
			}
			defer tr.Close()
			if tc.want == "" || tr.Mode() != tc.want {
				t.Fatalf("a tree in mode %s, want %q", tr.Mode(), tc.want)
			}
			if tr.Mode() == proctree.ModeEvents && tr.Filter() != nil {
				t.Logf("the connector is unfiltered here: %v", tr.Filter())
			}
		})
	}
}
