package e2e

// End-to-end test of a fleet (issue 15), the same scenario on each store:
// three `watchdog serve` with three host ids share one PostgreSQL
// database, and one SQLite file (as daemons on one machine may). Each
// ends only its own dead processes; exactly one leads, and the gauges'
// sum over the three is the fleet; on PostgreSQL a leader whose lock
// connection is cut stops leading before another starts; the leader's
// host-less work moves to another daemon when it is killed, each effect
// applied once; a silent host's live entities read disconnected, then
// lost, and are never ended; its daemon, back, judges them afresh. No two
// daemons' leaderships, as their logs bound them, ever overlap.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/store"
	_ "watchdog/store/postgres" // store.Open's postgres driver, for the audit log's read
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

// fleetStore is the store a fleet shares: a driver and its dsn, and a
// directory for the daemons' configs and logs.
type fleetStore struct {
	driver, dsn, dir string
}

// fleetStart starts `watchdog serve` for host on the shared store, its
// config and log in their own directory, and waits for /readyz.
func fleetStart(t *testing.T, fs fleetStore, host string) *fleetDaemon {
	t.Helper()
	dir := filepath.Join(fs.dir, host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	driver := ""
	if fs.driver != store.DriverSQLite {
		driver = fmt.Sprintf("\n  driver: %s", fs.driver)
	}
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf(`host_id: %s
store:%s
  dsn: %q
listen: 127.0.0.1:0
auth: none
log:
  level: info
  format: json
%s`, host, driver, fs.dsn, fleetSections))
	f := &fleetDaemon{rmtDaemon: &rmtDaemon{db: fs.dsn, log: filepath.Join(dir, "serve.log")}, host: host, cfg: cfg}
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
					svRememberToken(f.base, f.cfg)
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
	off := strings.LastIndex(l, `"msg":"not leading: `)
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

// leaderSpan is one leadership of one daemon as its log bounds it: it
// began no earlier than from and ended no later than until.
type leaderSpan struct {
	host        string
	from, until time.Time
}

// leaderships reads the daemon's leaderships from its log. One still
// open ends at killedAt when the daemon was killed (a dead process acts
// no more), else it runs on.
func (f *fleetDaemon) leaderships(t *testing.T, killedAt time.Time) []leaderSpan {
	t.Helper()
	var spans []leaderSpan
	var open *leaderSpan
	for _, line := range strings.Split(f.logs(), "\n") {
		var l struct {
			Msg   string `json:"msg"`
			From  string `json:"from"`
			Until string `json:"until"`
		}
		if !strings.Contains(line, "leading: ") || json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		switch {
		case strings.HasPrefix(l.Msg, "leading: "):
			if open != nil {
				t.Errorf("%s led again without its leadership ending: %s", f.host, line)
			}
			from, err := time.Parse(time.RFC3339Nano, l.From)
			if err != nil {
				t.Fatalf("%s: from in %s: %v", f.host, line, err)
			}
			open = &leaderSpan{host: f.host, from: from}
		case strings.HasPrefix(l.Msg, "not leading: ") && open != nil:
			until, err := time.Parse(time.RFC3339Nano, l.Until)
			if err != nil {
				t.Fatalf("%s: until in %s: %v", f.host, line, err)
			}
			open.until = until
			spans = append(spans, *open)
			open = nil
		}
	}
	if open != nil {
		open.until = killedAt
		if killedAt.IsZero() {
			open.until = time.Now().Add(time.Hour)
		}
		spans = append(spans, *open)
	}
	return spans
}

// leadershipLines is the daemon's "leadership: " log lines, in order.
func (f *fleetDaemon) leadershipLines() []string {
	var out []string
	for _, line := range strings.Split(f.logs(), "\n") {
		var l struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "leadership: ") && !strings.Contains(l.Msg, "cannot") && !strings.Contains(l.Msg, "lost") {
			out = append(out, l.Msg)
		}
	}
	return out
}

// assertPartsLogged: every daemon's log says its part at each change
// (issue 39 #8): the first, started alone, said it led alone, then what
// it became once the others arrived; each one's last line says what
// watchdog_leader says now.
func assertPartsLogged(t *testing.T, ds []*fleetDaemon) {
	t.Helper()
	if lines := ds[0].leadershipLines(); len(lines) < 2 || !strings.HasPrefix(lines[0], "leadership: leading alone") {
		t.Errorf("%s, started alone, logged %q; want leading alone, then its part among the others", ds[0].host, lines)
	}
	for _, d := range ds {
		testenv.Eventually(t, d.host+"'s last leadership line says what watchdog_leader says", rmtDeadline, func() (bool, string) {
			lines := d.leadershipLines()
			if len(lines) == 0 {
				return false, "no leadership line"
			}
			last := lines[len(lines)-1]
			return strings.HasPrefix(last, "leadership: leading, elected") == d.leads() && !strings.Contains(last, "alone"), last
		})
	}
}

// assertOneLeaderAtATime fails when two daemons' leaderships overlap.
func assertOneLeaderAtATime(t *testing.T, ds []*fleetDaemon, killed map[*fleetDaemon]time.Time) {
	t.Helper()
	var all []leaderSpan
	for _, d := range ds {
		all = append(all, d.leaderships(t, killed[d])...)
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.host != b.host && a.from.Before(b.until) && b.from.Before(a.until) {
				t.Errorf("two leaders at once: %s from %s until %s, %s from %s until %s",
					a.host, a.from.Format(time.RFC3339Nano), a.until.Format(time.RFC3339Nano),
					b.host, b.from.Format(time.RFC3339Nano), b.until.Format(time.RFC3339Nano))
			}
		}
	}
	if len(all) == 0 {
		t.Error("no daemon ever led")
	}
}

// fleetCounts reads the fleet's entities per severity from the API of
// one daemon, and, summed over the scrapes of the running daemons,
// watchdog_entities per severity and watchdog_leader.
func fleetCounts(t *testing.T, view *fleetDaemon, running []*fleetDaemon) (list, gauges map[string]int, leaders int) {
	t.Helper()
	list, gauges = map[string]int{}, map[string]int{}
	for _, e := range view.list(t, "").Items {
		if !e.State.Legacy() {
			list[string(e.State.Severity)]++
		}
	}
	for _, d := range running {
		code, body := d.do(t, "GET", "/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("%s: GET /metrics: %d", d.host, code)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("%s: parse /metrics: %v", d.host, err)
		}
		for _, m := range mfs["watchdog_entities"].GetMetric() {
			for _, lp := range m.GetLabel() {
				if n := int(m.GetGauge().GetValue()); lp.GetName() == "severity" && n > 0 {
					gauges[lp.GetValue()] += n
				}
			}
		}
		for _, m := range mfs["watchdog_leader"].GetMetric() {
			leaders += int(m.GetGauge().GetValue())
		}
	}
	return list, gauges, leaders
}

// assertFleetCounted waits until exactly one daemon says it leads
// (watchdog_leader summed over the running daemons is 1) and the sum of
// their watchdog_entities is the fleet's list, severity by severity: no
// entity counted twice, none left out.
func assertFleetCounted(t *testing.T, running []*fleetDaemon) {
	t.Helper()
	testenv.Eventually(t, "one leader, and the gauges' sum is the fleet", rmtDeadline, func() (bool, string) {
		list, gauges, leaders := fleetCounts(t, running[0], running)
		return leaders == 1 && fmt.Sprint(list) == fmt.Sprint(gauges),
			fmt.Sprintf("watchdog_leader sums to %d; list %v, gauges %v", leaders, list, gauges)
	})
}

// terminateLeaderLock ends, through a connection of the test's own, the
// server session holding the fleet's advisory lock (daemon.leaderLockKey,
// a bigint key: its high and low halves), as a broken network or a
// restarted pooler would.
func terminateLeaderLock(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const key = 0x7761746368646f67
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1 AND granted`,
		int64(key>>32), int64(key&0xffffffff)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminating the leader's lock session: %d sessions, %v", n, err)
	}
}

func TestFleetThreeHostsOneStore(t *testing.T) {
	t.Parallel()
	stores := []struct {
		driver string
		dsn    func(t *testing.T, dir string) string
	}{
		{store.DriverSQLite, func(t *testing.T, dir string) string { return filepath.Join(dir, "watchdog.db") }},
		{store.DriverPostgres, func(t *testing.T, _ string) string { return testenv.Postgres(t) }},
	}
	for _, s := range stores {
		t.Run(s.driver, func(t *testing.T) {
			dir := t.TempDir()
			fleetScenario(t, fleetStore{driver: s.driver, dsn: s.dsn(t, dir), dir: dir})
		})
	}
}

// fleetScenario is issue 15's fleet proof on one store.
func fleetScenario(t *testing.T, fs fleetStore) {
	hosts := []string{"host-a", "host-b", "host-c"}
	var ds []*fleetDaemon
	for _, h := range hosts {
		ds = append(ds, fleetStart(t, fs, h))
	}
	killed := map[*fleetDaemon]time.Time{}
	defer func() { assertOneLeaderAtATime(t, ds, killed) }()

	// Each host registers, through its own daemon, a dead process and a
	// live one. The dead ones end; each by its own host's daemon only. A
	// running show is host-less: only the leader counts it.
	for _, d := range ds {
		p := testenv.Sleep(t)
		d.register(t, fmt.Sprintf(`{"type":"session","id":"dead-%s","lifecycle":"running","pid":%d}`, d.host, testenv.DeadPID(t)))
		d.register(t, fmt.Sprintf(`{"type":"session","id":"live-%s","lifecycle":"running","pid":%d}`, d.host, p.Process.Pid))
	}
	ds[0].register(t, `{"type":"show","id":"s0","lifecycle":"active"}`)
	for _, d := range ds {
		ds[0].seen(t, "session", "dead-"+d.host)
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

	// One view from any daemon, filtered by host: host-c's, once its
	// change feed has brought the other daemons' writes (it lists each
	// host's two sessions; more would be wrong).
	for _, h := range hosts {
		var l wire.EntityList
		testenv.Eventually(t, "host-c lists host "+h+"'s two sessions", rmtDeadline, func() (bool, string) {
			l = ds[2].list(t, "host="+h)
			if l.Total > 2 {
				t.Fatalf("?host=%s on host-c: %d entities, want 2", h, l.Total)
			}
			return l.Total == 2, fmt.Sprintf("%d entities", l.Total)
		})
		for _, e := range l.Items {
			if e.HostID != h {
				t.Errorf("?host=%s listed %s/%s of %q", h, e.Type, e.ID, e.HostID)
			}
		}
	}

	// The three daemons run on one machine: one hostname, three hosts.
	// By that name the host is ambiguous, and the answer lists the ids
	// (issue 39 #4).
	if name, err := os.Hostname(); err == nil && name != "" {
		code, body := ds[2].do(t, "GET", "/api/v1/entities?host="+url.QueryEscape(name), "")
		if code != http.StatusBadRequest || !strings.Contains(body, "host-a, host-b, host-c") {
			t.Errorf("?host=%s, a name three hosts bear: %d %s; want 400 listing their ids", name, code, body)
		}
	}

	// Exactly one leader, and the gauges' sum is the fleet.
	assertFleetCounted(t, ds)
	assertPartsLogged(t, ds)
	leaderOf := func(ds []*fleetDaemon) *fleetDaemon {
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
		return leader
	}
	leader := leaderOf(ds)

	if fs.driver == store.DriverPostgres {
		// The leader's lock connection is cut: it stops leading (its
		// try proves the hold by a round trip on that connection), and
		// another daemon, or itself on a new connection, leads after it;
		// never both at once (assertOneLeaderAtATime, at the end).
		ends := strings.Count(leader.logs(), "not leading: ")
		terminateLeaderLock(t, fs.dsn)
		testenv.Eventually(t, leader.host+" stops leading with its lock connection", rmtDeadline, func() (bool, string) {
			return strings.Count(leader.logs(), "not leading: ") > ends, "still leading"
		})
		assertFleetCounted(t, ds)
		leader = leaderOf(ds)
	}

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
	for _, o := range others {
		o.seen(t, "session", mine)
	}
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
	// The silent host's entities are the leader's to count meanwhile.
	assertFleetCounted(t, others)

	// The host's daemon returns and judges its entity afresh.
	quiet.start(t)
	testenv.Eventually(t, mine+" judged afresh by its own daemon", rmtDeadline, func() (bool, string) {
		e := others[0].must(t, "session", mine)
		return e.State.Health == "running", string(e.State.Health)
	})

	// The leader dies without a word (SIGKILL: on PostgreSQL the server
	// frees its lock as the kernel closes its socket; on SQLite its lease
	// runs out). Host-less work moves: a team whose show completed is
	// closed exactly once, whether registered as the leader dies (t1:
	// either leader may close it) or after (t2: the new leader does).
	var survivors []*fleetDaemon
	for _, d := range ds {
		if d != leader {
			survivors = append(survivors, d)
		}
	}
	survivors[0].register(t, `{"type":"show","id":"s1","lifecycle":"completed"}`)
	survivors[1].register(t, `{"type":"team","id":"t1","lifecycle":"active","parent":{"type":"show","id":"s1"}}`)
	leader.stop(syscall.SIGKILL)
	killed[leader] = time.Now()
	survivors[1].register(t, `{"type":"team","id":"t2","lifecycle":"active","parent":{"type":"show","id":"s1"}}`)
	// Read from the other survivor once its change feed brings the team.
	if h := survivors[0].seen(t, "team", "t2").HostID; h != "" {
		t.Fatalf("team t2 registered on %q, want host-less", h)
	}
	for _, team := range []string{"t1", "t2"} {
		survivors[0].seen(t, "team", team)
		testenv.Eventually(t, "the orphaned team "+team+" closed", rmtDeadline, func() (bool, string) {
			e := survivors[0].must(t, "team", team)
			return e.State.Lifecycle == "closed", e.State.Lifecycle
		})
	}
	var next time.Time
	for _, d := range survivors {
		for _, s := range d.leaderships(t, time.Time{}) {
			if s.from.After(killed[leader]) && (next.IsZero() || s.from.Before(next)) {
				next = s.from
			}
		}
	}
	// Said, not asserted: a loaded machine may be slower.
	t.Logf("%s: the killed leader was replaced %s after its death", fs.driver, next.Sub(killed[leader]))
	assertFleetCounted(t, survivors)

	// The audit log: one end of each team, and no end of any live session.
	st, err := store.Open(context.Background(), fs.driver, fs.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, team := range []string{"t1", "t2"} {
		rows, err := st.Transitions(context.Background(), "team", team)
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
			t.Errorf("team %s has %d closing audit rows, want exactly 1", team, closes)
		}
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
