package main

// End-to-end test of a fleet (issue 15) on one SQLite file: three
// `watchdog serve` with three host ids share the store, as daemons of
// three hosts share a PostgreSQL database. Each ends only its own dead
// processes; the leader's host-less work moves to another daemon when it
// dies; a silent host's live entities read disconnected, then lost, and
// are never ended; its daemon, back, judges them afresh.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/wire"
)

// fleetSections: one-second jobs, a short grace, and short host
// thresholds, so that a silent host reads disconnected after 2s and lost
// after 10s.
const fleetSections = `thresholds:
  terminal_grace: 1s
  host_disconnected_after: 2s
  host_lost_after: 10s
jobs:
  sweep: "@every 1s"
  enforce_terminal: "@every 1s"
  reap_phantoms: "@every 1s"
  check_schedules: "@every 1s"
  vacuum: "@every 1s"
`

// fleetDaemon is one daemon of the fleet, restartable.
type fleetDaemon struct {
	*rmtDaemon
	host string
	cfg  string
	cmd  *exec.Cmd
	done chan struct{}
}

// fleetStart starts `watchdog serve` for host on the shared database db,
// its config and log in their own directory, and waits for /readyz.
func fleetStart(t *testing.T, db, host string) *fleetDaemon {
	t.Helper()
	dir := filepath.Join(filepath.Dir(db), host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf(`host_id: %s
store:
  dsn: %q
listen: 127.0.0.1:0
auth: none
log:
  level: info
  format: json
%s`, host, db, fleetSections))
	f := &fleetDaemon{rmtDaemon: &rmtDaemon{db: db, log: filepath.Join(dir, "serve.log")}, host: host, cfg: cfg}
	f.start(t)
	t.Cleanup(func() {
		f.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("%s's log:\n%s", host, f.logs())
		}
	})
	return f
}

// start (re)starts the daemon, appending to its log.
func (f *fleetDaemon) start(t *testing.T) {
	t.Helper()
	logFile, err := os.OpenFile(f.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	before, _ := os.ReadFile(f.log)
	f.cmd = exec.Command(binPath, "serve", "--config", f.cfg)
	f.cmd.Env = rmtEnv()
	f.cmd.Stdout, f.cmd.Stderr = io.Discard, logFile
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", f.host, err)
	}
	f.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait() //nolint:errcheck // the exit is reported through done
		close(done)
	}(f.cmd, f.done)
	f.base = ""
	hc := &http.Client{Timeout: 5 * time.Second}
	testenv.Eventually(t, f.host+" ready", rmtDeadline, func() (bool, string) {
		select {
		case <-f.done:
			t.Fatalf("%s exited before it was ready:\n%s", f.host, f.logs())
		default:
		}
		if f.base == "" {
			f.base = rmtListenAddr(f.logs()[len(before):])
		}
		if f.base != "" {
			if resp, err := hc.Get(f.base + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return true, ""
				}
			}
		}
		return false, f.logs()
	})
}

// stop signals the daemon and waits for it to exit.
func (f *fleetDaemon) stop(sig syscall.Signal) {
	if f.cmd == nil {
		return
	}
	f.cmd.Process.Signal(sig) //nolint:errcheck // it may have exited already
	select {
	case <-f.done:
	case <-time.After(rmtDeadline):
		f.cmd.Process.Kill() //nolint:errcheck // best effort
		<-f.done
	}
	f.cmd = nil
}

// leads says whether the daemon's last word on leadership is that it
// leads.
func (f *fleetDaemon) leads() bool {
	l := f.logs()
	on := strings.LastIndex(l, "leading: this daemon does the host-less work")
	off := strings.LastIndex(l, "not leading: another daemon does the host-less work")
	return on >= 0 && on > off
}

// list reads GET /api/v1/entities with query.
func (f *fleetDaemon) list(t *testing.T, query string) wire.EntityList {
	t.Helper()
	code, body := f.do(t, "GET", "/api/v1/entities?limit=500&"+query, "")
	if code != http.StatusOK {
		t.Fatalf("list %s: %d %s", query, code, body)
	}
	var l wire.EntityList
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// transitionLogged says whether the daemon's log records its reaper
// moving entity (type/id).
func (f *fleetDaemon) transitionLogged(entity string) bool {
	for _, line := range strings.Split(f.logs(), "\n") {
		if strings.Contains(line, `"msg":"transition"`) && strings.Contains(line, `"entity":"`+entity+`"`) {
			return true
		}
	}
	return false
}

func TestFleetThreeHostsOneStore(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "watchdog.db")
	hosts := []string{"host-a", "host-b", "host-c"}
	var ds []*fleetDaemon
	for _, h := range hosts {
		ds = append(ds, fleetStart(t, db, h))
	}

	// Each host registers, through its own daemon, a dead process and a
	// live one. The dead ones end; each by its own host's daemon only.
	live := map[string]*exec.Cmd{}
	for _, d := range ds {
		p := testenv.Sleep(t)
		live[d.host] = p
		d.register(t, fmt.Sprintf(`{"type":"session","id":"dead-%s","lifecycle":"running","pid":%d}`, d.host, testenv.DeadPID(t)))
		d.register(t, fmt.Sprintf(`{"type":"session","id":"live-%s","lifecycle":"running","pid":%d}`, d.host, p.Process.Pid))
	}
	for _, d := range ds {
		testenv.Eventually(t, "dead-"+d.host+" ended", rmtDeadline, func() (bool, string) {
			e := ds[0].must(t, "session", "dead-"+d.host)
			return e.State.Lifecycle == "aborted" && e.HostID == d.host, fmt.Sprintf("%s on %q", e.State.Lifecycle, e.HostID)
		})
	}
	for _, d := range ds {
		for _, other := range ds {
			if got := d.transitionLogged("session/dead-" + other.host); got != (d == other) {
				t.Errorf("%s's daemon ended session/dead-%s: %v", d.host, other.host, got)
			}
		}
	}

	// One view from any daemon, filtered by host.
	for _, h := range hosts {
		l := ds[2].list(t, "host="+h)
		if l.Total != 2 {
			t.Errorf("?host=%s on host-c: %d entities, want 2", h, l.Total)
		}
		for _, e := range l.Items {
			if e.HostID != h {
				t.Errorf("?host=%s listed %s/%s of %q", h, e.Type, e.ID, e.HostID)
			}
		}
	}

	// Exactly one leader.
	var leader *fleetDaemon
	testenv.Eventually(t, "one leader", rmtDeadline, func() (bool, string) {
		n := 0
		for _, d := range ds {
			if d.leads() {
				n++
				leader = d
			}
		}
		return n == 1, fmt.Sprintf("%d leaders", n)
	})

	// A daemon that is not the leader stops. Its live entity reads
	// disconnected, then lost, on the others, and is never ended: its
	// process runs on.
	var quiet *fleetDaemon
	var others []*fleetDaemon
	for _, d := range ds {
		if d != leader && quiet == nil {
			quiet = d
		} else {
			others = append(others, d)
		}
	}
	quiet.stop(syscall.SIGTERM)
	mine := "live-" + quiet.host
	fp := attention.Fingerprint("session", mine, "system.host.disconnected")
	testenv.Eventually(t, mine+" disconnected", rmtDeadline, func() (bool, string) {
		e := others[0].must(t, "session", mine)
		_, queued := item(others[1].queue(t, "host="+quiet.host), fp)
		return e.State.Health == "disconnected" && queued, fmt.Sprintf("health %s, queued %v", e.State.Health, queued)
	})
	fpLost := attention.Fingerprint("session", mine, "system.host.lost")
	testenv.Eventually(t, mine+" lost", rmtDeadline, func() (bool, string) {
		e := others[1].must(t, "session", mine)
		it, queued := item(others[0].queue(t, "host="+quiet.host), fpLost)
		return e.State.Health == "lost" && queued && it.Severity == "critical", fmt.Sprintf("health %s, queued %v (%s)", e.State.Health, queued, it.Severity)
	})
	if q := others[0].queue(t, "host=nobody"); q.Total != 0 {
		t.Errorf("?host=nobody: %d items", q.Total)
	}
	if e := others[0].must(t, "session", mine); e.State.Lifecycle != "running" {
		t.Errorf("a lost host's entity was ended: %s", e.State.Lifecycle)
	}

	// The host's daemon returns and judges its entity afresh.
	quiet.start(t)
	testenv.Eventually(t, mine+" judged afresh by its own daemon", rmtDeadline, func() (bool, string) {
		e := others[0].must(t, "session", mine)
		return e.State.Health == "running", string(e.State.Health)
	})

	// The leader dies without a word (SIGKILL: its lease is not given
	// up). Host-less work moves: a team whose show completed is closed by
	// the new leader once the lease expired, exactly once.
	leader.stop(syscall.SIGKILL)
	var survivors []*fleetDaemon
	for _, d := range ds {
		if d != leader {
			survivors = append(survivors, d)
		}
	}
	survivors[0].register(t, `{"type":"show","id":"s1","lifecycle":"completed"}`)
	survivors[1].register(t, `{"type":"team","id":"t1","lifecycle":"active","parent":{"type":"show","id":"s1"}}`)
	if h := survivors[0].must(t, "team", "t1").HostID; h != "" {
		t.Fatalf("team t1 registered on %q, want host-less", h)
	}
	testenv.Eventually(t, "the new leader closes the orphaned team", rmtDeadline, func() (bool, string) {
		e := survivors[0].must(t, "team", "t1")
		return e.State.Lifecycle == "closed", e.State.Lifecycle
	})

	// The audit log: one end of the team, and no end of any live session.
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows, err := st.Transitions(context.Background(), "team", "t1")
	if err != nil {
		t.Fatal(err)
	}
	closes := 0
	for _, r := range rows {
		if r.To == "closed" {
			closes++
		}
	}
	if closes != 1 {
		t.Errorf("team t1 has %d closing audit rows, want exactly 1", closes)
	}
	for _, h := range hosts {
		rows, err := st.Transitions(context.Background(), "session", "live-"+h)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Errorf("session live-%s has %d audit rows, want only its registration", h, len(rows))
		}
	}
}
