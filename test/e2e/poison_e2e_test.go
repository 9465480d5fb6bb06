package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
)

// TestServePoisonContractKeepsDeathDetection is issue 11's first finding
// against the built daemon: with a completed session whose contract walks
// a root of two self-symlinks with a 30-level glob, and another with 1,000
// globs over a directory of 5,000 files, both already in the store (as an
// older version accepted them; registration now refuses them), the daemon
// becomes ready, stays ready, and a session killed meanwhile is ended on
// time.
func TestServePoisonContractKeepsDeathDetection(t *testing.T) {
	t.Parallel()
	dir, db, cfg := svSetup(t, svConfig{Grace: "2s", Phantom: "1h"})
	root := filepath.Join(dir, "poison")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.SelfLinks(t, root)
	testenv.BigDir(t, root, 5000)
	many := make([]state.ArtifactSpec, 1000)
	for i := range many {
		many[i] = state.ArtifactSpec{Path: fmt.Sprintf("big/nomatch-%d-*", i), Required: true}
	}
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	completed, now := "completed", float64(time.Now().UnixNano())/1e9
	for id, specs := range map[string][]state.ArtifactSpec{
		"poison-deep": {{Path: strings.Repeat("*/", 30) + "x", Required: true}},
		"poison-many": many,
	} {
		e := store.Entity{Type: "session", ID: id, Lifecycle: &completed, Terminal: true, HostID: probe.NewHost().HostID(),
			ArtifactsRoot: root, Artifacts: specs, StartedAt: unixAt(now - 60), EndedAt: unixAt(now)}
		if _, err := st.Register(context.Background(), e, "orchestrator", unixAt(now)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	d := svStart(t, cfg, db) // ready means a first sweep finished
	for _, id := range []string{"poison-deep", "poison-many"} {
		e := d.waitEntity("session", id, "judged", func(e svEntity) bool { return e.hasReason("run.delivery.check_stopped") })
		if e.State.Delivery != "unknown" {
			t.Errorf("%s: delivery %s", id, e.State.Delivery)
		}
	}
	// Registration refuses the same contract outright.
	if r := wd(t, `{"type":"session","id":"again","lifecycle":"completed","artifacts_root":"`+root+`","artifacts":[{"path":"`+strings.Repeat("*/", 30)+`x"}]}`,
		"register", "--db", db, "--json", "-"); r.code == 0 || !strings.Contains(r.stderr, "the limit is 16") {
		t.Errorf("register of the poison: exit %d: %s", r.code, r.stderr)
	}

	p := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"s1","lifecycle":"running","pid":%d}`, p.pid))
	d.waitEntity("session", "s1", "seen alive", func(e svEntity) bool { return e.State.Health == "running" })
	killed := time.Now()
	p.kill(t)
	d.waitEntity("session", "s1", "ended", func(e svEntity) bool { return e.lifecycle() == "aborted" })
	// Grace 2s, sweeps and enforcement every second: a few seconds, not
	// the svDeadline the wait allows.
	if took := time.Since(killed); took > 10*time.Second {
		t.Errorf("ended %s after the kill", took)
	}
	resp, err := http.Get(d.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz %d", resp.StatusCode)
	}
}
