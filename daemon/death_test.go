package daemon

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/config"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
)

// TestOneDeathOneProbeOneWrite: a real daemon with the pidfd watcher and
// the process connector both on, its jobs an hour apart, and a session
// on a real process killed by SIGKILL. From the kill to the entity's end
// at terminal_grace the daemon makes one probe and one observation write
// (the death, its dead_since and its exit status together), then the end
// in one transition; the end coming back from the store brings neither a
// probe nor a write. Counted by the daemon's own counters on /metrics.
func TestOneDeathOneProbeOneWrite(t *testing.T) {
	needConnector(t)
	d := serve(t, func(c *config.Config) { c.Thresholds.TerminalGrace = config.Duration(2 * time.Second) })
	sleep := sleeper(t)
	d.register(t, store.Entity{Type: "session", ID: "s", PID: sleep.Process.Pid})
	testenv.Eventually(t, "the session judged running and watched", ceiling, func() (bool, string) {
		e := d.get(t, "session", "s")
		return e.Health == state.HealthRunning && counters(t, d.addr)[`watchdog_watched_processes{mode="pidfd"}`] == 1, string(e.Health)
	})
	before := counters(t, d.addr)
	audit, err := d.st.Transitions(context.Background(), "session", "s")
	if err != nil {
		t.Fatal(err)
	}

	if err := sleep.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = sleep.Wait()
	testenv.Eventually(t, "the session ended at terminal_grace", ceiling, func() (bool, string) {
		e := d.get(t, "session", "s")
		return e.Terminal, e.LifecycleOr("") + " " + string(e.Health)
	})
	// The end's own echo (the feed bringing it back to the monitor) has
	// its turn before the counts are read.
	time.Sleep(time.Second)
	after := counters(t, d.addr)

	e := d.get(t, "session", "s")
	if e.Health != state.HealthProcessDead || e.DeadSince.IsZero() || e.Exit == nil || e.Exit.Signal != int(syscall.SIGKILL) {
		t.Errorf("health %s dead_since %v exit %+v: want process_dead, a dead_since and SIGKILL", e.Health, e.DeadSince, e.Exit)
	}
	rows, err := d.st.Transitions(context.Background(), "session", "s")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rows) - len(audit); n != 1 || rows[len(rows)-1].To != "aborted" {
		t.Errorf("%d transitions after the death (%+v), want the one end", n, rows[len(audit):])
	}
	for _, c := range []string{"watchdog_probes_total", "watchdog_observations_written_total"} {
		if d := after[c] - before[c]; d != 1 {
			t.Errorf("%s rose by %v for one death, want 1", c, d)
		}
	}
}

// counters reads the daemon's /metrics as name{labels} → value.
func counters(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		var v float64
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
				out[line[:i]] = v
			}
		}
	}
	return out
}
