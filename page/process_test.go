//go:build linux

package page

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
	"watchdog/wire"
)

// TestEntityPageProcessFacts: an open entity's page shows its process
// facts, read at the request (ADR-0048); a reused pid's says why there
// are none; an ended one's has no block.
func TestEntityPageProcessFacts(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "watchdog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	view := live.New(st, time.Now, 0)
	if err := view.Load(ctx); err != nil {
		t.Fatal(err)
	}
	host := probe.NewHost()
	procs := &wire.Processes{HostID: host.HostID(), Read: reaper.ReadFacts(probe.NewFacts(host), nil)}
	srv := httptest.NewServer(New(Options{View: view, Store: st, Processes: procs}))
	t.Cleanup(srv.Close)

	sleep := testenv.Sleep(t)
	id, err := host.Identify(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	w := &transitions.Writer{Store: st, Now: time.Now}
	reg := func(entID string, startTicks uint64) {
		t.Helper()
		running := "running"
		ent := store.Entity{Type: "session", ID: entID, Lifecycle: &running, PID: id.PID, PIDStartTime: id.StartTime,
			PIDStartTicks: startTicks, HostID: host.HostID(), BootID: id.BootID}
		if _, err := w.Register(ctx, transitions.Registration{Entity: ent, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	reg("mine", id.StartTicks)
	reg("reused", id.StartTicks+1)
	reg("ended", id.StartTicks)
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "ended", To: "completed", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	get := func(entID string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/entities/session/" + entID)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", entID, resp.StatusCode, b)
		}
		return string(b)
	}
	body := get("mine")
	for _, want := range []string{`data-testid="process"`, `data-testid="process-cpu">CPU `, `data-testid="process-rss">RSS `,
		`data-testid="process-uptime">up `, `data-testid="process-tasks">1</span>`, `data-testid="process-descendants">0</span>`, "1 threads"} {
		if !strings.Contains(body, want) {
			t.Errorf("the open entity's page lacks %s", want)
		}
	}
	if body := get("reused"); !strings.Contains(body, `data-testid="process-unavailable">not read: pid reused`) || strings.Contains(body, "process-cpu") {
		t.Errorf("a reused pid's page: %s", body)
	}
	if body := get("ended"); strings.Contains(body, `data-testid="process"`) {
		t.Errorf("an ended entity's page shows process facts")
	}
}
