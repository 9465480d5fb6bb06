package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"watchdog/attention"
	"watchdog/config"
	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// TestTouchClearsIdleAtOnce: a real daemon whose sweep runs once a
// minute, a session idle for want of a touch of its heartbeat file. The
// touch is seen by inotify: the health and the daemon's queue clear
// within 3 s, not at the next sweep.
func TestTouchClearsIdleAtOnce(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	hb := filepath.Join(dir, "beat")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store.DSN = db
	cfg.Listen = "127.0.0.1:0"
	cfg.Thresholds.IdleAfter = config.Duration(2 * time.Second)
	cfg.Jobs = config.Jobs{Sweep: "@every 1m", EnforceTerminal: "@every 1h", ReapPhantoms: "@every 1h", CheckSchedules: "@every 1h", Vacuum: "@every 1h"}
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: cfg, Log: zap.New(core), Version: "test"}) }()
	defer func() {
		cancel()
		<-done
	}()
	addr := boundAddr(t, logs)

	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st, Now: time.Now, Ident: probe.NewHost()}
	running := "running"
	if _, err := w.Register(context.Background(), transitions.Registration{
		Entity: store.Entity{Type: "session", ID: "s", Lifecycle: &running, PID: sleep.Process.Pid, HeartbeatFile: hb}, Actor: transitions.ActorOrchestrator,
	}); err != nil {
		t.Fatal(err)
	}
	token, err := os.ReadFile(filepath.Join(dir, "watchdog.token"))
	if err != nil {
		t.Fatal(err)
	}
	queued := func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/attention", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var q attention.Queue
		if err := json.NewDecoder(resp.Body).Decode(&q); err != nil {
			t.Fatal(err)
		}
		for _, it := range q.Items {
			if it.Entity.ID == "s" {
				return true
			}
		}
		return false
	}
	health := func() state.Health {
		e, err := st.Get(context.Background(), "session", "s")
		if err != nil {
			t.Fatal(err)
		}
		return e.Health
	}
	testenv.Eventually(t, "the session idle and queued", ceiling, func() (bool, string) {
		h := health()
		return h == state.HealthIdle && queued(), string(h)
	})

	now := time.Now()
	if err := os.Chtimes(hb, now, now); err != nil {
		t.Fatal(err)
	}
	deadline := now.Add(3 * time.Second)
	for health() != state.HealthRunning || queued() {
		if time.Now().After(deadline) {
			t.Fatalf("3 s after the touch: health %s, queued %v; want running and out of the queue", health(), queued())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("cleared %v after the touch", time.Since(now))
	if c := counters(t, addr)[`watchdog_heartbeat_files{mode="inotify"}`]; c != 1 {
		t.Errorf("watchdog_heartbeat_files{mode=\"inotify\"} = %v, want 1", c)
	}
}
