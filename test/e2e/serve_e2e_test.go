package e2e

// End-to-end tests of `watchdog serve`: the built binary (binPath, built
// once in TestMain) runs on a temporary SQLite database with thresholds of
// seconds and every job at "@every 1s"; the tests drive it with real
// `sleep` processes and the CLI, and read what it did through the HTTP API,
// the audit table (opened read-only) and its JSON log. Every wait polls
// against a generous deadline, so a slow machine makes a test slower,
// never red; the few waits for something NOT to happen are bounded by the
// daemon's own job runs (counted in /metrics), not by the clock.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the test reads the daemon's database itself

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/store/sqlite"
	"watchdog/tokenfile"
	"watchdog/transitions"
)

// svDeadline bounds every wait for the daemon to do something: the
// ceiling.
const svDeadline = ceiling

// svConfig holds the knobs the cases turn; empty values take the defaults
// written in yaml.
type svConfig struct {
	Grace, Phantom      string // thresholds.terminal_grace, thresholds.phantom_after
	Enforce, Reap       string // jobs.enforce_terminal, jobs.reap_phantoms
	Sweep, Schedules    string // jobs.sweep, jobs.check_schedules (default every second)
	DryRun, KillOrphans bool
}

func (c svConfig) yaml(db string) string {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return fmt.Sprintf(`store:
  dsn: %q
listen: 127.0.0.1:0
thresholds:
  terminal_grace: %s
  phantom_after: %s
jobs:
  sweep: %q
  enforce_terminal: %q
  reap_phantoms: %q
  check_schedules: %q
reaper:
  dry_run: %t
  kill_orphans: %t
  kill_grace: 1s
  kill_users: [%d] # the test's own sleeps: root's when it runs as root
log:
  level: info
  format: json
`, db, or(c.Grace, "3s"), or(c.Phantom, "1h"), or(c.Sweep, "@every 1s"), or(c.Enforce, "@every 1s"), or(c.Reap, "@every 1s"), or(c.Schedules, "@every 1s"), c.DryRun, c.KillOrphans, os.Getuid())
}

// svEnv is the test's environment without anything that would steer the
// binary: WATCHDOG_* and systemd's notify variables.
func svEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "WATCHDOG_") || strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// svDaemon is one running `watchdog serve`.
type svDaemon struct {
	t    *testing.T
	cmd  *exec.Cmd
	db   string
	cfg  string
	base string // http://127.0.0.1:PORT
	logs *testenv.Buffer
	done chan struct{} // closed when the process has exited
	code int           // its exit code, once done is closed
}

// svWriteConfig writes a config for db into dir and returns its path.
func svWriteConfig(t *testing.T, dir string, c svConfig, db string) string {
	t.Helper()
	return writeFile(t, dir, "config.yaml", c.yaml(db))
}

// svStart starts `watchdog serve --config cfg` and waits until it says it
// is ready (store open, first sweep done, HTTP bound). The daemon is
// stopped at the end of the test if the test did not stop it.
func svStart(t *testing.T, cfg, db string, env ...string) *svDaemon {
	t.Helper()
	cmd := exec.Command(binPath, "serve", "--config", cfg)
	cmd.Env = svEnv(env...)
	return svLaunch(t, cmd, cfg, db)
}

// svLaunch is svStart with the command given: the binary's serve, maybe
// behind a wrapper that sets its limits.
func svLaunch(t *testing.T, cmd *exec.Cmd, cfg, db string) *svDaemon {
	t.Helper()
	d := &svDaemon{t: t, db: db, cfg: cfg, logs: &testenv.Buffer{}, done: make(chan struct{})}
	d.cmd = cmd
	d.cmd.Stdout, d.cmd.Stderr = io.Discard, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	go func() {
		err := d.cmd.Wait()
		d.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			d.code = ee.ExitCode()
		} else if err != nil {
			d.code = -1
		}
		close(d.done)
	}()
	t.Cleanup(func() {
		if !d.exited() {
			d.signal(syscall.SIGTERM)
			select {
			case <-d.done:
			case <-time.After(svDeadline):
				d.cmd.Process.Kill() //nolint:errcheck // best effort at cleanup
				<-d.done
			}
		}
		if t.Failed() {
			t.Logf("daemon log (%s):\n%s", cfg, d.logs.String())
		}
	})

	testenv.Eventually(t, "daemon ready", svDeadline, func() (bool, string) {
		if d.exited() {
			t.Fatalf("serve exited with %d before it was ready:\n%s", d.code, d.logs.String())
		}
		for _, l := range d.logLines() {
			if l["msg"] == "listening" {
				addr, _ := l["addr"].(string)
				d.base = "http://" + addr
			}
			if l["msg"] == "ready" && d.base != "" {
				svRememberToken(d.base, cfg)
				return true, ""
			}
		}
		return false, d.logs.String()
	})
	return d
}

func (d *svDaemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *svDaemon) signal(sig syscall.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatalf("signal %s: %v", sig, err)
	}
}

// wait waits for the daemon to exit and returns its exit code.
func (d *svDaemon) wait() int {
	d.t.Helper()
	select {
	case <-d.done:
		return d.code
	case <-time.After(svDeadline):
		d.t.Fatalf("serve still running %s after it was told to stop", svDeadline)
		return -1
	}
}

// logLines decodes the daemon's JSON log so far.
func (d *svDaemon) logLines() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(d.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// logged returns the log lines with message msg whose fields contain every
// key/value of want.
func (d *svDaemon) logged(msg string, want map[string]string) []map[string]any {
	var out []map[string]any
	for _, l := range d.logLines() {
		if l["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if s, _ := l[k].(string); !strings.Contains(s, v) {
				ok = false
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// svEntity is the part of GET /api/v1/entities/{type}/{id} the tests read.
type svEntity struct {
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	Lifecycle *string `json:"lifecycle"`
	CreatedAt float64 `json:"created_at"`
	State     struct {
		Lifecycle string `json:"lifecycle"`
		Outcome   string `json:"outcome"`
		Health    string `json:"health"`
		Delivery  string `json:"delivery"`
		Severity  string `json:"severity"`
		Reasons   []struct {
			Code     string `json:"code"`
			Evidence []struct {
				Kind   string `json:"kind"`
				Detail string `json:"detail"`
			} `json:"evidence"`
		} `json:"reasons"`
	} `json:"state"`
	ExitStatus *struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"exit_status"`
	Transitions []svAudit `json:"transitions"`
}

type svAudit struct {
	From       *string `json:"from"`
	To         string  `json:"to"`
	ReasonCode string  `json:"reason_code"`
	Actor      string  `json:"actor"`
	Evidence   []struct {
		Kind   string `json:"kind"`
		Detail string `json:"detail"`
	} `json:"evidence"`
	At float64 `json:"at"`
}

func (e svEntity) lifecycle() string { return e.State.Lifecycle }

func (e svEntity) hasReason(code string) bool {
	for _, r := range e.State.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

func (e svEntity) last() svAudit {
	if len(e.Transitions) == 0 {
		return svAudit{}
	}
	return e.Transitions[len(e.Transitions)-1]
}

func (e svEntity) String() string {
	b, _ := json.Marshal(e)
	return string(b)
}

// svHTTP's timeout is the ceiling: a loaded daemon answers late, never
// wrongly.
var svHTTP = &http.Client{Timeout: ceiling}

// Reads need a principal (issue 36): the tests' requests to a daemon they
// started carry its admin token unless they set an Authorization of
// their own, or NoAuth to send none. Installed on http.DefaultTransport
// by TestMain, so every client of the tests (svHTTP, http.Get) has it.
var svTokens sync.Map // host:port → the daemon's admin token

// svTokenFiles are the admin token's files, for the command line's
// --server (WATCHDOG_TOKEN_FILE): wd gives a command the file of the
// daemon it names.
var svTokenFiles sync.Map // host:port → path

// NoAuth is a request header the tests set to send no token: the
// transport removes it and adds none.
const NoAuth = "X-Test-No-Auth"

type svAuthTransport struct{ next http.RoundTripper }

func (a svAuthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case r.Header.Get(NoAuth) != "":
		r = r.Clone(r.Context())
		r.Header.Del(NoAuth)
	case r.Header.Get("Authorization") == "":
		if tok, ok := svTokens.Load(r.URL.Host); ok {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok.(string))
		}
	}
	return a.next.RoundTrip(r)
}

// svTokenFile is the admin token file of the daemon started with cfg on
// db: auth.token_file when the config names one, else the daemon's own
// beside the database.
var (
	svTokenFileRe = regexp.MustCompile(`(?m)^\s*token_file:\s*"?([^"\n]+?)"?\s*$`)
	svDSNRe       = regexp.MustCompile(`(?m)^\s*dsn:\s*"?([^"\n]+?)"?\s*$`)
)

func svRememberToken(base, cfg string) {
	b, err := os.ReadFile(cfg)
	if err != nil {
		return
	}
	path := ""
	if m := svDSNRe.FindSubmatch(b); m != nil {
		path = tokenfile.BesideDatabase(string(m[1]))
	}
	if m := svTokenFileRe.FindSubmatch(b); m != nil {
		path = string(m[1])
	}
	if f, err := tokenfile.Read(path); err == nil {
		svTokens.Store(strings.TrimPrefix(base, "http://"), f.Token)
		svTokenFiles.Store(strings.TrimPrefix(base, "http://"), path)
	}
}

// entity reads one entity over HTTP.
func (d *svDaemon) entity(typ, id string) svEntity {
	d.t.Helper()
	resp, err := svHTTP.Get(d.base + "/api/v1/entities/" + typ + "/" + id)
	if err != nil {
		d.t.Fatalf("GET %s/%s: %v", typ, id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		d.t.Fatalf("GET %s/%s: %d %s", typ, id, resp.StatusCode, body)
	}
	var e svEntity
	if err := json.Unmarshal(body, &e); err != nil {
		d.t.Fatalf("GET %s/%s: %v in %s", typ, id, err, body)
	}
	return e
}

// metric reads one sample from /metrics by its exact series name, 0 when
// absent.
func (d *svDaemon) metric(series string) float64 {
	d.t.Helper()
	resp, err := svHTTP.Get(d.base + "/metrics")
	if err != nil {
		d.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				d.t.Fatalf("metric %s: %v", series, err)
			}
			return v
		}
	}
	return 0
}

func jobRuns(job string) string {
	return fmt.Sprintf(`watchdog_job_runs_total{job=%q,result="ok"}`, job)
}

// waitRuns waits until job has completed n more successful runs than when
// called: the daemon has had n chances to act.
func (d *svDaemon) waitRuns(job string, n int) {
	d.t.Helper()
	from := d.metric(jobRuns(job))
	testenv.Eventually(d.t, fmt.Sprintf("%d more %s runs", n, job), svDeadline, func() (bool, string) {
		now := d.metric(jobRuns(job))
		return now >= from+float64(n), fmt.Sprintf("%s: %v, started at %v", job, now, from)
	})
}

// waitEntity polls one entity until cond holds.
func (d *svDaemon) waitEntity(typ, id, what string, cond func(svEntity) bool) svEntity {
	d.t.Helper()
	var e svEntity
	testenv.Eventually(d.t, typ+"/"+id+" "+what, svDeadline, func() (bool, string) {
		e = d.entity(typ, id)
		return cond(e), e.String()
	})
	return e
}

// svProc is a real process the test owns (a `sleep`), reaped by the test.
type svProc struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{}
}

func svSleep(t *testing.T) *svProc {
	t.Helper()
	// testenv.Sleep's own cleanup runs after this one and finds the
	// process reaped already.
	p := &svProc{cmd: testenv.Sleep(t), done: make(chan struct{})}
	p.pid = p.cmd.Process.Pid
	go func() {
		p.cmd.Wait() //nolint:errcheck // its end is what the tests look at
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill() //nolint:errcheck // may be gone already
		<-p.done
	})
	return p
}

func (p *svProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill kills the process and waits until it is reaped: its pid is gone.
func (p *svProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(svDeadline):
		t.Fatalf("pid %d did not die", p.pid)
	}
}

// svRegister registers an entity with the CLI, on the daemon's database.
func svRegister(t *testing.T, db, doc string) {
	t.Helper()
	if r := wd(t, doc, "register", "--db", db, "--json", "-"); r.code != 0 {
		t.Fatalf("register %s: exit %d: %s", doc, r.code, r.stderr)
	}
}

// svCLI runs the binary like wd, without a *testing.T, for goroutines; a
// command that could not start reads as exit -1.
func svCLI(args ...string) result {
	cmd := exec.Command(binPath, args...)
	cmd.Env = svEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code, errb = -1, *bytes.NewBufferString(err.Error())
	}
	return result{code, out.String(), errb.String()}
}

// svTransition records a transition with the CLI, failing the test when it
// is refused.
func svTransition(t *testing.T, db string, args ...string) {
	t.Helper()
	if r := wd(t, "", append([]string{"transition", "--db", db}, args...)...); r.code != 0 {
		t.Fatalf("transition %v: exit %d: %s", args, r.code, r.stderr)
	}
}

// svOpenRO opens the daemon's database read-only, as an operator's
// sqlite3 would.
func svOpenRO(t *testing.T, db string) *sql.DB {
	t.Helper()
	h, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// svRow is one audit row, straight from the transitions table.
type svRow struct {
	ID, To, Reason, Actor string
}

// svTerminalRows returns the audit rows of entities of typ (id "" = all)
// that moved into a terminal state of the type's graph, in order.
func svTerminalRows(t *testing.T, db, typ, id string) []svRow {
	t.Helper()
	g, err := transitions.Lookup(typ)
	if err != nil {
		t.Fatal(err)
	}
	h := svOpenRO(t, db)
	defer h.Close()
	rows, err := h.Query(`SELECT entity_id, to_lifecycle, reason_code, actor FROM transitions
		WHERE entity_type = ? AND (? = '' OR entity_id = ?) ORDER BY seq`, typ, id, id)
	if err != nil {
		t.Fatalf("read transitions: %v", err)
	}
	defer rows.Close()
	var out []svRow
	for rows.Next() {
		var r svRow
		if err := rows.Scan(&r.ID, &r.To, &r.Reason, &r.Actor); err != nil {
			t.Fatal(err)
		}
		if g.IsTerminal(r.To) {
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// svAuditSummary is the count and the last sequence number of every audit
// row: any write through the write path changes it.
func svAuditSummary(t *testing.T, db string) string {
	t.Helper()
	h := svOpenRO(t, db)
	defer h.Close()
	var n, last int64
	if err := h.QueryRow(`SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM transitions`).Scan(&n, &last); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d rows, last seq %d", n, last)
}

// svSetup makes a directory with a database path and a config for it.
func svSetup(t *testing.T, c svConfig) (dir, db, cfg string) {
	t.Helper()
	dir = t.TempDir()
	db = filepath.Join(dir, "watchdog.db")
	return dir, db, svWriteConfig(t, dir, c, db)
}

func TestServeEnforcesTerminalAfterGraceNotBefore(t *testing.T) {
	t.Parallel()
	const grace = 4 * time.Second
	_, db, cfg := svSetup(t, svConfig{Grace: "4s", Phantom: "1h"})
	d := svStart(t, cfg, db)
	p := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"a1","lifecycle":"running","pid":%d}`, p.pid))
	d.waitEntity("session", "a1", "seen alive", func(e svEntity) bool { return e.State.Health == "running" })

	killedAt := float64(time.Now().UnixNano()) / 1e9
	p.kill(t)
	// The sweep records the death at once; the lifecycle stays running:
	// the owner has terminal_grace to record its own end.
	e := d.waitEntity("session", "a1", "seen dead", func(e svEntity) bool { return e.State.Health == "process_dead" })
	if e.lifecycle() != "running" || !e.hasReason("run.health.process_dead") {
		t.Fatalf("just after death: lifecycle %s, reasons %+v; want still running with run.health.process_dead", e.lifecycle(), e.State.Reasons)
	}

	e = d.waitEntity("session", "a1", "ended", func(e svEntity) bool { return e.lifecycle() != "running" })
	last := e.last()
	if e.lifecycle() != "aborted" || e.State.Outcome != "aborted" || last.To != "aborted" ||
		last.ReasonCode != "system.health.process_dead_no_terminal" || last.Actor != "reaper" {
		t.Fatalf("ended as %s (outcome %s) by %+v; want aborted, system.health.process_dead_no_terminal, actor reaper", e.lifecycle(), e.State.Outcome, last)
	}
	if len(last.Evidence) == 0 || !strings.Contains(last.Evidence[0].Detail, fmt.Sprintf("pid %d", p.pid)) {
		t.Errorf("no pid evidence on the terminal row: %+v", last.Evidence)
	}
	// Not before the grace: the write came at least terminal_grace after
	// the kill (the audit time is stored to the millisecond).
	if waited := last.At - killedAt; waited < grace.Seconds()-0.002 {
		t.Errorf("ended %.3fs after the kill, before terminal_grace %s", waited, grace)
	}
	if !e.hasReason("system.health.process_dead_no_terminal") {
		t.Errorf("state reasons %+v lack the terminal reason", e.State.Reasons)
	}

	// The CLI's status --json reads the same from the shared database.
	r := wd(t, "", "status", "--db", db, "--json")
	var st struct {
		Items []svEntity `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != 0 || err != nil || len(st.Items) != 1 {
		t.Fatalf("status --json: exit %d, %v: %s", r.code, err, r.stdout)
	}
	if got := st.Items[0]; got.lifecycle() != "aborted" || got.State.Severity != "critical" || got.last().ReasonCode != "system.health.process_dead_no_terminal" {
		t.Errorf("status --json says %s", got)
	}
	if rows := svTerminalRows(t, db, "session", "a1"); len(rows) != 1 {
		t.Errorf("terminal audit rows %+v, want exactly one", rows)
	}
}

func TestServeOwnerEndInsideGraceWins(t *testing.T) {
	t.Parallel()
	// A grace long enough for the owner's CLI call on a slow machine.
	const grace = 10 * time.Second
	_, db, cfg := svSetup(t, svConfig{Grace: "10s", Phantom: "1h"})
	d := svStart(t, cfg, db)
	p := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"b1","lifecycle":"running","pid":%d}`, p.pid))
	d.waitEntity("session", "b1", "seen alive", func(e svEntity) bool { return e.State.Health == "running" })

	p.kill(t)
	d.waitEntity("session", "b1", "seen dead", func(e svEntity) bool { return e.State.Health == "process_dead" })
	seenDead := time.Now()
	// The owner records its own end, inside the grace.
	svTransition(t, db, "session/b1", "completed", "--actor", "orchestrator", "--reason", "run.completed.exit_zero")
	if time.Since(seenDead) >= grace {
		t.Fatalf("the owner's write took longer than terminal_grace: the case did not happen")
	}

	// Give enforcement every chance to write a second end: wait out the
	// grace, then two more enforce_terminal runs.
	testenv.Eventually(t, "terminal_grace over", svDeadline, func() (bool, string) { return time.Since(seenDead) > grace+time.Second, "" })
	d.waitRuns("enforce_terminal", 2)
	d.waitRuns("reap_phantoms", 2)

	e := d.entity("session", "b1")
	if e.lifecycle() != "completed" || e.last().Actor != "orchestrator" {
		t.Fatalf("the owner's end did not stand: %s", e)
	}
	rows := svTerminalRows(t, db, "session", "b1")
	if len(rows) != 1 || rows[0].To != "completed" || rows[0].Actor != "orchestrator" {
		t.Fatalf("terminal audit rows %+v, want exactly the owner's completed", rows)
	}
	if applied := d.logged("transition", map[string]string{"entity": "session/b1"}); len(applied) != 0 {
		t.Errorf("the reaper says it applied a transition to b1: %v", applied)
	}
}

func TestServeReusedPIDNeverAliveNorSignalled(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{Grace: "2s", Phantom: "2s", KillOrphans: true})
	d := svStart(t, cfg, db)

	// The live process behind a reused pid: the entity recorded another
	// start time, and a dead supervisor, so that a check that ignored the
	// identity would call it an orphan and kill it.
	live := svSleep(t)
	start, _, err := probe.NewHost().StartOf(live.pid)
	if err != nil {
		t.Fatal(err)
	}
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"reused","lifecycle":"running","pid":%d,"pid_start_time":%f,"supervisor_pid":%d}`,
		live.pid, unixtime.Seconds(start)-1000, testenv.DeadPID(t)))
	// The control: a verified orphan (its own process, a dead supervisor)
	// is reaped and killed, so kill_orphans is really on in this daemon.
	orphan := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"orphan","lifecycle":"running","pid":%d,"supervisor_pid":%d}`, orphan.pid, testenv.DeadPID(t)))

	e := d.waitEntity("session", "reused", "ended", func(e svEntity) bool {
		if h := e.State.Health; e.lifecycle() == "running" && h != "unknown" && h != "process_dead" {
			t.Fatalf("the reused pid read as %s: %s", h, e)
		}
		// Once ended for the death, the end's reason subsumes the
		// finding (state.Subsumes); its evidence names the reuse (below).
		if e.State.Health == "process_dead" && e.lifecycle() == "running" && !e.hasReason("run.health.pid_reused") {
			t.Fatalf("dead, but not for the reused pid: %s", e)
		}
		return e.lifecycle() != "running"
	})
	if e.lifecycle() != "aborted" {
		t.Fatalf("reused: %s", e)
	}
	if code := e.last().ReasonCode; code != "system.health.process_dead_no_terminal" && code != "system.reaper.phantom_process_dead" {
		t.Errorf("reused ended with %s, want a dead-process reason", code)
	}
	if !strings.Contains(fmt.Sprint(e.last().Evidence), "reused by another process") {
		t.Errorf("the terminal row's evidence does not say the pid was reused: %+v", e.last().Evidence)
	}

	o := d.waitEntity("session", "orphan", "reaped", func(e svEntity) bool { return e.lifecycle() != "running" })
	if o.last().ReasonCode != "system.reaper.phantom_orphaned" {
		t.Fatalf("orphan control: %s", o)
	}
	testenv.Eventually(t, "the verified orphan killed", svDeadline, func() (bool, string) { return !orphan.running(), "still running" })

	// More chances to misbehave, then the innocent process must be alive.
	d.waitRuns("reap_phantoms", 3)
	d.waitRuns("sweep", 2)
	if !live.running() {
		t.Fatal("the process that took over the pid was signalled")
	}
	if e := d.entity("session", "reused"); e.State.Health == "orphaned" || e.lifecycle() != "aborted" {
		t.Errorf("after the end the reused pid reads as %s (%s)", e.State.Health, e.lifecycle())
	}
}

func TestServeReapsPhantoms(t *testing.T) {
	t.Parallel()
	const phantomAfter, grace = 3 * time.Second, 3 * time.Second
	// The enforce_terminal job is as good as off (hourly); the monitor's
	// deadlines at death + terminal_grace and at phantom_after coincide
	// here, and the more specific verdict, a phantom, is tried first.
	_, db, cfg := svSetup(t, svConfig{Grace: "3s", Phantom: "3s", Enforce: "@every 1h"})
	d := svStart(t, cfg, db)
	tests := []struct{ typ, want string }{
		{"workflow", "failed"},
		{"subagent", "failed"},
		{"invocation", "failed"},
	}
	for _, tt := range tests {
		svRegister(t, db, fmt.Sprintf(`{"type":%q,"id":"ph-1","lifecycle":"running","pid":%d}`, tt.typ, testenv.DeadPID(t)))
	}
	// A quiet one whose process dies only after phantom_after: its owner
	// still gets terminal_grace from the death.
	late := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"workflow","id":"ph-late","lifecycle":"running","pid":%d}`, late.pid))

	for _, tt := range tests {
		e := d.waitEntity(tt.typ, "ph-1", "reaped", func(e svEntity) bool { return e.lifecycle() != "running" })
		last := e.last()
		if e.lifecycle() != tt.want || last.ReasonCode != "system.reaper.phantom_process_dead" || last.Actor != "reaper" {
			t.Errorf("%s: ended %s by %+v, want %s with system.reaper.phantom_process_dead", tt.typ, e.lifecycle(), last, tt.want)
		}
		if quiet := last.At - e.CreatedAt; quiet < phantomAfter.Seconds()-0.002 {
			t.Errorf("%s: reaped %.3fs after registration, before phantom_after %s", tt.typ, quiet, phantomAfter)
		}
		if rows := svTerminalRows(t, db, tt.typ, "ph-1"); len(rows) != 1 {
			t.Errorf("%s: terminal rows %+v", tt.typ, rows)
		}
	}

	e := d.entity("workflow", "ph-late")
	testenv.Eventually(t, "ph-late quiet for phantom_after", svDeadline, func() (bool, string) {
		return float64(time.Now().UnixNano())/1e9 > e.CreatedAt+phantomAfter.Seconds()+1, ""
	})
	if e = d.entity("workflow", "ph-late"); e.lifecycle() != "running" || e.State.Health != "running" {
		t.Fatalf("ph-late before its death: %s", e)
	}
	killedAt := float64(time.Now().UnixNano()) / 1e9
	late.kill(t)
	e = d.waitEntity("workflow", "ph-late", "reaped", func(e svEntity) bool { return e.lifecycle() != "running" })
	if last := e.last(); last.ReasonCode != "system.reaper.phantom_process_dead" || last.At-killedAt < grace.Seconds()-0.002 {
		t.Errorf("ph-late reaped %.3fs after its death (terminal_grace %s) by %+v", last.At-killedAt, grace, last)
	}
	for typ, want := range map[string]float64{"workflow": 2, "subagent": 1, "invocation": 1} {
		series := fmt.Sprintf(`watchdog_reaped_total{entity_type=%q,reason_code="system.reaper.phantom_process_dead"}`, typ)
		if got := d.metric(series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

func TestServeClosesOrphanedTeams(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{})
	d := svStart(t, cfg, db)
	svRegister(t, db, `{"type":"show","id":"sh","lifecycle":"active"}`)
	svRegister(t, db, `{"type":"play","id":"pl","lifecycle":"running"}`)
	svRegister(t, db, `{"type":"team","id":"t-show","parent":{"type":"show","id":"sh"}}`)
	svRegister(t, db, `{"type":"team","id":"t-play","parent":{"type":"play","id":"pl"}}`)

	// While the parents are open the teams stay.
	d.waitRuns("reap_phantoms", 2)
	for _, id := range []string{"t-show", "t-play"} {
		if e := d.entity("team", id); e.lifecycle() != "active" {
			t.Fatalf("%s moved while its parent was open: %s", id, e)
		}
	}

	svTransition(t, db, "show/sh", "archived", "--actor", "orchestrator")
	svTransition(t, db, "play/pl", "cancelled", "--actor", "orchestrator", "--reason", "run.cancelled.operator")
	for _, id := range []string{"t-show", "t-play"} {
		e := d.waitEntity("team", id, "closed", func(e svEntity) bool { return e.lifecycle() == "closed" })
		if last := e.last(); last.ReasonCode != "team.health.orphaned" || last.Actor != "reaper" {
			t.Errorf("%s closed by %+v, want team.health.orphaned by the reaper", id, last)
		}
	}
}

func TestServeBlocksPlaysOnFailedDependency(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{})
	d := svStart(t, cfg, db)
	svRegister(t, db, `{"type":"play","id":"p0","lifecycle":"running"}`)
	svRegister(t, db, `{"type":"play","id":"p1","lifecycle":"planned","depends_on":["p0"]}`)
	svRegister(t, db, `{"type":"play","id":"p2","lifecycle":"queued","depends_on":["p0"]}`)

	d.waitRuns("reap_phantoms", 2)
	if e := d.entity("play", "p1"); e.lifecycle() != "planned" {
		t.Fatalf("p1 moved while p0 was running: %s", e)
	}

	svTransition(t, db, "play/p0", "failed", "--actor", "orchestrator", "--reason", "run.failed.exit_nonzero")
	for _, id := range []string{"p1", "p2"} {
		e := d.waitEntity("play", id, "blocked", func(e svEntity) bool { return e.lifecycle() == "blocked" })
		last := e.last()
		if last.ReasonCode != "play.blocked.dependency_failed" || last.Actor != "reaper" || !strings.Contains(fmt.Sprint(last.Evidence), "play/p0") {
			t.Errorf("%s blocked by %+v, want play.blocked.dependency_failed naming play/p0", id, last)
		}
	}
}

func TestServeReportsMisfiredSchedules(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{})
	d := svStart(t, cfg, db)
	now := float64(time.Now().Unix())
	svRegister(t, db, fmt.Sprintf(`{"type":"schedule","id":"late","schedule":{"cron":"*/5 * * * *","last_fired_at":%f}}`, now-3600))
	svRegister(t, db, fmt.Sprintf(`{"type":"schedule","id":"fresh","schedule":{"cron":"*/5 * * * *","last_fired_at":%f}}`, now))

	e := d.waitEntity("schedule", "late", "misfired", func(e svEntity) bool { return e.State.Health == "misfired" })
	if !e.hasReason("schedule.health.misfired") || e.State.Severity != "critical" || e.lifecycle() != "enabled" {
		t.Errorf("late: %s", e)
	}
	// The fresh one fired just now: judged, and not misfired.
	f := d.waitEntity("schedule", "fresh", "judged", func(e svEntity) bool { return e.State.Health != "unknown" })
	if f.State.Health == "misfired" {
		t.Errorf("fresh schedule reads %s", f)
	}
}

func TestServeDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{Grace: "1s", Phantom: "1s", DryRun: true})
	// Everything a reaper job would change, registered before the daemon
	// starts.
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"dead","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)))
	svRegister(t, db, `{"type":"show","id":"gone","lifecycle":"archived"}`)
	svRegister(t, db, `{"type":"team","id":"left","parent":{"type":"show","id":"gone"}}`)
	svRegister(t, db, `{"type":"play","id":"dep","lifecycle":"failed"}`)
	svRegister(t, db, `{"type":"play","id":"waiting","lifecycle":"planned","depends_on":["dep"]}`)
	before := svAuditSummary(t, db)

	d := svStart(t, cfg, db)
	for _, entity := range []string{"session/dead", "team/left", "play/waiting"} {
		testenv.Eventually(t, "dry run logged for "+entity, svDeadline, func() (bool, string) {
			return len(d.logged("dry run: would transition", map[string]string{"action": entity})) > 0, d.logs.String()
		})
	}
	d.waitRuns("enforce_terminal", 2)
	d.waitRuns("reap_phantoms", 2)
	if after := svAuditSummary(t, db); after != before {
		t.Fatalf("dry run wrote audit rows: before %s, after %s", before, after)
	}
	for _, ref := range [][2]string{{"session", "dead"}, {"team", "left"}, {"play", "waiting"}} {
		if e := d.entity(ref[0], ref[1]); len(e.Transitions) != 1 {
			t.Errorf("%s/%s: %d audit rows, want only its registration", ref[0], ref[1], len(e.Transitions))
		}
	}
	if got := d.metric(`watchdog_reaped_total{entity_type="session",reason_code="system.health.process_dead_no_terminal"}`); got != 0 {
		t.Errorf("watchdog_reaped_total counts %v dry-run reaps", got)
	}
}

// TestServeNoDoubleTerminal races the daemon's enforcement and reaping
// with an operator's CLI writing the same ends on one database file:
// every entity ends exactly once. (A second daemon on the same file is
// refused: TestServeSecondDaemonRefused.)
func TestServeNoDoubleTerminal(t *testing.T) {
	t.Parallel()
	const n = 16
	_, db, cfg := svSetup(t, svConfig{Grace: "1s", Phantom: "2s"})
	a := svStart(t, cfg, db)

	procs := make([]*svProc, n)
	for i := range procs {
		procs[i] = svSleep(t)
		svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"r%d","lifecycle":"running","pid":%d}`, i, procs[i].pid))
	}
	for i := range procs {
		a.waitEntity("session", fmt.Sprintf("r%d", i), "seen alive", func(e svEntity) bool { return e.State.Health == "running" })
	}

	// Kill them all; an operator's CLI fails each one at a different
	// moment across the grace, racing both daemons' enforcement.
	var wg sync.WaitGroup
	cli := make([]result, n)
	for i, p := range procs {
		p.kill(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 400 * time.Millisecond) // spread over 6s: before, at and after the grace
			cli[i] = svCLI("transition", "--db", db, fmt.Sprintf("session/r%d", i), "failed", "--reason", "run.failed.operator")
		}()
	}
	wg.Wait()

	for i := range procs {
		a.waitEntity("session", fmt.Sprintf("r%d", i), "ended", func(e svEntity) bool { return e.lifecycle() != "running" })
	}
	// The daemon gets more runs to try a second end.
	a.waitRuns("enforce_terminal", 2)
	a.waitRuns("reap_phantoms", 2)

	rows := svTerminalRows(t, db, "session", "")
	perEntity := map[string][]svRow{}
	for _, r := range rows {
		perEntity[r.ID] = append(perEntity[r.ID], r)
	}
	var cliWon, reaperWon int
	for i := range procs {
		id := fmt.Sprintf("r%d", i)
		got := perEntity[id]
		if len(got) != 1 {
			t.Errorf("%s: %d terminal audit rows %+v, want exactly one", id, len(got), got)
			continue
		}
		switch {
		case cli[i].code == 0 && got[0].Actor == "admin" && got[0].To == "failed":
			cliWon++
		case cli[i].code == 1 && got[0].Actor == "reaper" && got[0].To == "aborted":
			reaperWon++
			if !strings.Contains(cli[i].stderr, "conflict") && !strings.Contains(cli[i].stderr, "not allowed") {
				t.Errorf("%s: the losing CLI said %q", id, cli[i].stderr)
			}
		default:
			t.Errorf("%s: CLI exit %d (%s) but the row says %+v", id, cli[i].code, strings.TrimSpace(cli[i].stderr), got[0])
		}
	}
	// The daemon's log claims only the writes it made: its claims add
	// up to the reaper's rows, none twice.
	claims := map[string]int{}
	for _, l := range a.logged("transition", nil) {
		if l["logger"] == "reaper" {
			id, _ := l["entity"].(string)
			claims[id]++
		}
	}
	var claimed int
	for id, c := range claims {
		claimed += c
		if c != 1 {
			t.Errorf("%s: the daemons claim %d applied ends", id, c)
		}
	}
	if claimed != reaperWon {
		t.Errorf("daemons claim %d ends, the audit log has %d reaper ends", claimed, reaperWon)
	}
	t.Logf("%d ended by the CLI, %d by a daemon", cliWon, reaperWon)

	// The daemon recorded this host's presence, so daemons of other hosts
	// sharing the store leave its entities to them.
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hosts, err := st.DaemonHosts(context.Background(), unixAt(float64(time.Now().Add(-time.Hour).Unix())))
	if err != nil || len(hosts) != 1 {
		t.Errorf("daemon presence: %v %v, want this one host", hosts, err)
	}
}

func TestServeSIGTERMExitsCleanly(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{})
	d := svStart(t, cfg, db)
	p := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"j1","lifecycle":"running","pid":%d}`, p.pid))
	d.waitEntity("session", "j1", "seen alive", func(e svEntity) bool { return e.State.Health == "running" })
	d.waitRuns("sweep", 2)

	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("serve exited %d on SIGTERM, want 0", code)
	}
	if len(d.logged("stopped", nil)) != 1 {
		t.Errorf("no 'stopped' line in the log")
	}
	// The last connection closed with a checkpoint: SQLite removes the
	// WAL and shared-memory files only then (a killed daemon leaves them).
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(db + suffix); err == nil {
			t.Errorf("%s%s left behind: the store was not closed", filepath.Base(db), suffix)
		}
	}
	h := svOpenRO(t, db)
	defer h.Close()
	var check string
	if err := h.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	var lifecycle string
	if err := h.QueryRow("SELECT lifecycle FROM entities WHERE id = 'j1'").Scan(&lifecycle); err != nil || lifecycle != "running" {
		t.Errorf("j1 after shutdown: %q, %v", lifecycle, err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(d.base, "http://"), time.Second); err == nil {
		c.Close()
		t.Errorf("still accepting connections on %s after exit", d.base)
	}
}

func TestServeSIGHUPReload(t *testing.T) {
	t.Parallel()
	dir, db, cfg := svSetup(t, svConfig{Grace: "1h"})
	d := svStart(t, cfg, db)
	p := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"k1","lifecycle":"running","pid":%d}`, p.pid))
	d.waitEntity("session", "k1", "seen alive", func(e svEntity) bool { return e.State.Health == "running" })
	p.kill(t)
	d.waitEntity("session", "k1", "seen dead", func(e svEntity) bool { return e.State.Health == "process_dead" })

	// An invalid file that would also shorten the grace: nothing of it
	// may apply.
	bad := strings.Replace(svConfig{Grace: "1s"}.yaml(db), "thresholds:\n", "thresholds:\n  idle_after: soon\n", 1)
	writeFile(t, dir, "config.yaml", bad)
	d.signal(syscall.SIGHUP)
	testenv.Eventually(t, "reload refused", svDeadline, func() (bool, string) {
		return len(d.logged("reload refused, keeping the running config", map[string]string{"error": "thresholds.idle_after"})) == 1, d.logs.String()
	})
	d.waitRuns("sweep", 2)
	d.waitRuns("enforce_terminal", 3)
	if e := d.entity("session", "k1"); e.lifecycle() != "running" {
		t.Fatalf("the refused config's 1s grace was applied: %s", e)
	}
	if len(d.logged("config reloaded", nil)) != 0 {
		t.Fatal("the log says an invalid config was reloaded")
	}
	// A refused reload is the operator's mistake: one line saying so, no
	// Go stack trace.
	if logs := d.logs.String(); strings.Contains(logs, "stacktrace") || strings.Contains(logs, "goroutine ") {
		t.Errorf("the log carries a stack trace:\n%s", logs)
	}

	// The valid file also shortens the failure window (which the API's
	// attention queue must follow) and turns on debug logging.
	good := svConfig{Grace: "1s"}.yaml(db)
	good = strings.Replace(good, "thresholds:\n", "thresholds:\n  failure_window: 2s\n", 1)
	good = strings.Replace(good, "level: info", "level: debug", 1)
	writeFile(t, dir, "config.yaml", good)
	d.signal(syscall.SIGHUP)
	testenv.Eventually(t, "config reloaded", svDeadline, func() (bool, string) { return len(d.logged("config reloaded", nil)) == 1, d.logs.String() })
	e := d.waitEntity("session", "k1", "ended under the new grace", func(e svEntity) bool { return e.lifecycle() != "running" })
	if e.lifecycle() != "aborted" || e.last().ReasonCode != "system.health.process_dead_no_terminal" {
		t.Errorf("after the reload: %s", e)
	}
	testenv.Eventually(t, "the aborted session leaves the queue after the new 2s window", svDeadline, func() (bool, string) {
		resp, err := http.Get(d.base + "/api/attention")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return !strings.Contains(string(b), `"k1"`), string(b)
	})
	testenv.Eventually(t, "debug lines after the reload", svDeadline, func() (bool, string) {
		for _, l := range d.logLines() {
			if l["level"] == "debug" {
				return true, ""
			}
		}
		return false, d.logs.String()
	})
	if d.exited() {
		t.Fatalf("serve exited after SIGHUP")
	}
}

// svNotify is a fake systemd: a unixgram socket that records every
// datagram the daemon sends, with its arrival time.
type svNotify struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []svMsg
}

type svMsg struct {
	at   time.Time
	text string
}

func svListenNotify(t *testing.T) *svNotify {
	t.Helper()
	// A short path: sun_path holds 108 bytes, t.TempDir() can exceed it.
	dir, err := os.MkdirTemp("", "wdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	n := &svNotify{path: filepath.Join(dir, "notify.sock")}
	n.conn, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.conn.Close() })
	go func() {
		buf := make([]byte, 64<<10)
		for {
			k, err := n.conn.Read(buf)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.msgs = append(n.msgs, svMsg{time.Now(), string(buf[:k])})
			n.mu.Unlock()
		}
	}()
	return n
}

func (n *svNotify) all() []svMsg {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]svMsg(nil), n.msgs...)
}

func (n *svNotify) texts() []string {
	var out []string
	for _, m := range n.all() {
		out = append(out, m.text)
	}
	return out
}

// index is the position of the first message from position from on that
// has a line equal to line (or starting with it, for "STATUS="), -1 if none.
func (n *svNotify) index(from int, line string) int {
	for i, m := range n.all() {
		if i < from {
			continue
		}
		for _, l := range strings.Split(m.text, "\n") {
			if l == line || (strings.HasSuffix(line, "=") && strings.HasPrefix(l, line)) {
				return i
			}
		}
	}
	return -1
}

// pings returns the arrival times of WATCHDOG=1 messages.
func (n *svNotify) pings() []time.Time {
	var out []time.Time
	for _, m := range n.all() {
		if m.text == "WATCHDOG=1" {
			out = append(out, m.at)
		}
	}
	return out
}

func (n *svNotify) wait(t *testing.T, from int, line string) int {
	t.Helper()
	var i int
	testenv.Eventually(t, "notify "+line, svDeadline, func() (bool, string) {
		i = n.index(from, line)
		return i >= 0, fmt.Sprintf("%q", n.texts())
	})
	return i
}

func TestServeNotifyProtocol(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{Grace: "1h"})
	// An entity the first sweep must judge: registered with a dead pid it
	// reads neutral (health unknown) until a sweep finds the death.
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"n-dead","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)))
	sd := svListenNotify(t)
	// WatchdogSec=2s: pings are due every second, from the daemon loop.
	d := svStart(t, cfg, db, "NOTIFY_SOCKET="+sd.path, "WATCHDOG_USEC=2000000")

	// READY=1 comes after the store opened and the first sweep ran: its
	// STATUS already counts the death that sweep found.
	ready := sd.wait(t, 0, "READY=1")
	if msg := sd.all()[ready].text; !strings.Contains(msg, "STATUS=1 open entities: 1 critical") {
		t.Errorf("READY's status does not show the first sweep's finding: %q", msg)
	}
	if w := sd.index(0, "WATCHDOG=1"); w < 0 || w > ready {
		t.Errorf("the first sweep did not ping before READY (ping at %d, READY at %d)", w, ready)
	}

	// Healthy: pings keep coming, with STATUS lines of counts.
	testenv.Eventually(t, "three pings after READY", svDeadline, func() (bool, string) {
		return len(sd.pings()) >= 4, fmt.Sprint(len(sd.pings()))
	})
	if i := sd.index(ready+1, "STATUS="); i < 0 || !strings.Contains(sd.all()[i].text, "critical") {
		t.Errorf("no STATUS= line with counts after READY: %q", sd.texts())
	}

	// Unhealthy: another process holds the database's write lock while an
	// entity's process dies. The store watch's write probe fails (and the
	// sweep that must record the death cannot write), so the pings must
	// stop.
	p := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"n-live","lifecycle":"running","pid":%d}`, p.pid))
	d.waitEntity("session", "n-live", "seen alive", func(e svEntity) bool { return e.State.Health == "running" })
	release := svHoldWriteLock(t, db)
	defer release()
	p.kill(t)
	const silence = 5 * time.Second // five sweep intervals, ten ping periods
	testenv.Eventually(t, "pings stop while the store cannot be written", svDeadline, func() (bool, string) {
		ps := sd.pings()
		last := ps[len(ps)-1]
		return time.Since(last) > silence, fmt.Sprintf("last ping %s ago", time.Since(last).Round(time.Millisecond))
	})
	stalled := len(sd.pings())
	release()
	testenv.Eventually(t, "pings resume once the store is writable", svDeadline, func() (bool, string) {
		return len(sd.pings()) > stalled, fmt.Sprint(len(sd.pings()))
	})
	d.waitEntity("session", "n-live", "death recorded", func(e svEntity) bool { return e.State.Health == "process_dead" })

	// SIGHUP: RELOADING=1, then READY=1 again.
	mark := len(sd.all())
	d.signal(syscall.SIGHUP)
	rl := sd.wait(t, mark, "RELOADING=1")
	sd.wait(t, rl, "READY=1")

	// SIGTERM: STOPPING=1, exit 0.
	mark = len(sd.all())
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d on SIGTERM", code)
	}
	sd.wait(t, mark, "STOPPING=1")
}

// svHoldWriteLock takes the database's write lock from this process (as a
// hung writer or a backup tool would) and holds it until release.
func svHoldWriteLock(t *testing.T, db string) func() {
	t.Helper()
	h, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := h.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("take the write lock: %v", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Errorf("release the write lock: %v", err)
			}
			conn.Close()
			h.Close()
		})
	}
}
