package daemon

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"watchdog/config"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// served is a daemon a test runs on its own SQLite file until the test
// ends, with the store opened beside it the way the CLI opens it.
type served struct {
	dir, addr string
	st        *sqlite.Store
}

// quietJobs runs every job an hour apart: only the daemon's events act.
var quietJobs = config.Jobs{Sweep: "@every 1h", EnforceTerminal: "@every 1h", ReapPhantoms: "@every 1h", CheckSchedules: "@every 1h", Vacuum: "@every 1h"}

// serve starts a daemon on cfg (its store and listen address set here;
// set changes the rest) and waits for its address.
func serve(t *testing.T, set func(*config.Config)) *served {
	t.Helper()
	s := &served{dir: t.TempDir()}
	cfg := config.Default()
	cfg.Store.DSN = filepath.Join(s.dir, "w.db")
	cfg.Listen = "127.0.0.1:0"
	cfg.Jobs = quietJobs
	set(cfg)
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: cfg, Log: zap.New(core), Version: "test"}) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	s.addr = boundAddr(t, logs)
	st, err := sqlite.Open(context.Background(), cfg.Store.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s.st = st
	return s
}

// register registers e, running, through the write path as an
// orchestrator, its pid's identity filled in by the probe.
func (s *served) register(t *testing.T, e store.Entity) {
	t.Helper()
	w := &transitions.Writer{Store: s.st, Now: time.Now, Ident: probe.NewHost()}
	running := "running"
	e.Lifecycle = &running
	if _, err := w.Register(context.Background(), transitions.Registration{Entity: e, Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
}

// get reads an entity from the store.
func (s *served) get(t *testing.T, typ, id string) store.Entity {
	t.Helper()
	e, err := s.st.Get(context.Background(), typ, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// sleeper starts a process for an entity to watch, ended with the test.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c
}

// needConnector skips a test where the process connector is not
// available (root on the host).
func needConnector(t *testing.T) {
	t.Helper()
	tr, err := proctree.New(proctree.Options{})
	if err != nil || tr.Mode() != proctree.ModeEvents {
		t.Skip("the process connector is not available here (root on the host)")
	}
	tr.Close()
}
