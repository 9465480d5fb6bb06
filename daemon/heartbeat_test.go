package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/config"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
)

// TestTouchClearsIdleAtOnce: a real daemon whose sweep runs once a
// minute, a session idle for want of a touch of its heartbeat file. The
// touch is seen by inotify: the health and the daemon's queue clear
// within 3 s, not at the next sweep.
func TestTouchClearsIdleAtOnce(t *testing.T) {
	d, hb := idleSoon(t, "@every 1m")
	token, err := os.ReadFile(filepath.Join(d.dir, "watchdog.token"))
	if err != nil {
		t.Fatal(err)
	}
	queued := func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+d.addr+"/api/attention", nil)
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
	health := func() state.Health { return d.get(t, "session", "s").Health }
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
	if c := counters(t, d.addr)[`watchdog_heartbeat_files{mode="inotify"}`]; c != 1 {
		t.Errorf("watchdog_heartbeat_files{mode=\"inotify\"} = %v, want 1", c)
	}
}

// TestSweepSkipsAnUnchangedWatchedFile: a real daemon sweeping every
// second, a session idle for want of a touch of its watched heartbeat
// file. The sweeps read the unchanged file no more
// (watchdog_heartbeat_file_stats_skipped_total grows), yet a change is
// still theirs to see: the file backdated by an hour (older, so the
// monitor, which rejudges only a newer touch, leaves it) is the heartbeat
// the idle finding cites after a sweep.
func TestSweepSkipsAnUnchangedWatchedFile(t *testing.T) {
	d, hb := idleSoon(t, "@every 1s")
	testenv.Eventually(t, "the session idle", ceiling, func() (bool, string) {
		h := d.get(t, "session", "s").Health
		return h == state.HealthIdle, string(h)
	})
	const skipped = "watchdog_heartbeat_file_stats_skipped_total"
	testenv.Eventually(t, "sweeps that make no stat of the file", ceiling, func() (bool, string) {
		n := counters(t, d.addr)[skipped]
		return n >= 2, fmt.Sprint(n)
	})

	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(hb, old, old); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the backdated file cited after a sweep", ceiling, func() (bool, string) {
		e := d.get(t, "session", "s")
		for _, r := range e.Reasons {
			for _, ev := range r.Evidence {
				if ev.Path == hb && strings.Contains(ev.Detail, state.Stamp(old)) {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%s %+v", e.Health, e.Reasons)
	})
}

// idleSoon serves a daemon whose sessions turn idle 2 s without a
// heartbeat, sweeping on sweep, with session/s registered running: a live
// process and a heartbeat file in the daemon's directory (returned).
func idleSoon(t *testing.T, sweep string) (*served, string) {
	t.Helper()
	var hb string
	d := serve(t, func(c *config.Config) {
		c.Thresholds.IdleAfter = config.Duration(2 * time.Second)
		c.Jobs.Sweep = sweep
		hb = filepath.Join(filepath.Dir(c.Store.DSN), "beat")
	})
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.register(t, store.Entity{Type: "session", ID: "s", PID: sleeper(t).Process.Pid, HeartbeatFile: hb})
	return d, hb
}
