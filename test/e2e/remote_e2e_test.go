package e2e

// End-to-end tests of register, heartbeat and transition through a running
// daemon's API (--server or WATCHDOG_SERVER, token from the file in
// WATCHDOG_TOKEN_FILE): the built binary (binPath, built once in TestMain)
// serves on a free loopback port and a temporary database, and the built
// binary's commands write to it from an empty working directory, so a
// command that opened a database instead would leave a file there. The
// daemon's jobs are scheduled hourly: after its startup sweep nothing but
// the commands under test writes, and "nothing changed" can compare the
// whole database. Readiness is polled on /readyz against a generous
// deadline; no assertion waits on a fixed sleep.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"watchdog/api"
	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
	"watchdog/wire"
)

// rmtDeadline bounds the daemon's start and stop; a slow shared machine
// makes the tests slower, never red.
const rmtDeadline = ceiling

// rmtToken is the daemon's bearer token in the auth cases.
const rmtToken = "e2e-token-5f1c"

// rmtDaemon is one running `watchdog serve`.
type rmtDaemon struct {
	base  string // http://127.0.0.1:PORT
	db    string // its database, readable with readDB
	token string // token file path; "" when auth is off
	log   string // the daemon's log file (JSON lines)
}

// rmtEnv is the test's environment without anything that would steer the
// binary (WATCHDOG_*, systemd's NOTIFY_SOCKET), plus extra.
func rmtEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "WATCHDOG_") || strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// rmtStart starts `watchdog serve` on 127.0.0.1:0 (the kernel picks a
// free port, which the daemon logs) and waits for /readyz. With auth the
// config sets auth.token_file; without, it says auth: none (the default
// would be the daemon's own token). The daemon is stopped with SIGTERM
// when the test ends.
func rmtStart(t *testing.T, withAuth bool) *rmtDaemon {
	t.Helper()
	return rmtStartWith(t, withAuth, `jobs:
  sweep: "@every 1h"
  enforce_terminal: "@every 1h"
  reap_phantoms: "@every 1h"
  check_schedules: "@every 1h"
  vacuum: "@daily"
`)
}

// rmtStartWith is rmtStart with the config's thresholds, jobs and reaper
// sections given as YAML (store, listen, auth and log are set here), and
// env added to the daemon's environment; an empty "JOURNAL_STREAM=" is
// filled with the log file's device:inode, as systemd sets it when stderr
// is the journal.
func rmtStartWith(t *testing.T, withAuth bool, sections string, env ...string) *rmtDaemon {
	t.Helper()
	return rmtStartAuth(t, withAuth, false, sections, env...)
}

// rmtStartPublic is rmtStart with auth and auth.public_reads: the page
// and the reads open, writes behind the token.
func rmtStartPublic(t *testing.T) *rmtDaemon {
	t.Helper()
	return rmtStartAuth(t, true, true, `jobs:
  sweep: "@every 1h"
  enforce_terminal: "@every 1h"
  reap_phantoms: "@every 1h"
  check_schedules: "@every 1h"
  vacuum: "@daily"
`)
}

func rmtStartAuth(t *testing.T, withAuth, publicReads bool, sections string, env ...string) *rmtDaemon {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "watchdog.db")
	auth := "auth: none\n"
	var token string
	if withAuth {
		token = writeFile(t, dir, "token", rmtToken+"\n")
		auth = fmt.Sprintf("auth:\n  token_file: %q\n  public_reads: %t\n", token, publicReads)
	}
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf(`store:
  dsn: %q
listen: 127.0.0.1:0
%s%slog:
  level: info
  format: json
`, db, auth, sections))
	d, _ := rmtServe(t, cfg, filepath.Join(dir, "serve.log"), env...)
	d.db, d.token = db, token
	return d
}

// rmtServe starts `watchdog serve --config cfg` (its stderr, the JSON log,
// to logPath) and waits for /readyz: the one way every end-to-end test
// starts a daemon. env is added to its environment; an empty
// "JOURNAL_STREAM=" is filled with the log file's device:inode. stop sends
// SIGTERM and waits for the exit (once; the test's cleanup calls it too,
// and prints the log of a failed test).
func rmtServe(t *testing.T, cfg, logPath string, env ...string) (d *rmtDaemon, stop func()) {
	t.Helper()
	d = &rmtDaemon{log: logPath}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	for i, kv := range env {
		if kv == "JOURNAL_STREAM=" {
			var st syscall.Stat_t
			if err := syscall.Fstat(int(logFile.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			env[i] = fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino)
		}
	}
	cmd := exec.Command(binPath, "serve", "--config", cfg)
	cmd.Env = rmtEnv(env...)
	cmd.Stdout, cmd.Stderr = io.Discard, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait() //nolint:errcheck // the exit is reported through done
		close(done)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
			select {
			case <-done:
			case <-time.After(rmtDeadline):
				cmd.Process.Kill() //nolint:errcheck // best effort at cleanup
				<-done
				t.Errorf("serve did not stop on SIGTERM within %s", rmtDeadline)
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("daemon log %s:\n%s", logPath, d.logs())
		}
	})

	hc := &http.Client{Timeout: 5 * time.Second}
	testenv.Eventually(t, "the daemon ready", rmtDeadline, func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("serve exited before it was ready:\n%s", d.logs())
		default:
		}
		if d.base == "" {
			d.base = rmtListenAddr(d.logs())
		}
		if d.base != "" {
			if resp, err := hc.Get(d.base + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					svRememberToken(d.base, cfg)
					return true, ""
				}
			}
		}
		return false, "daemon log:\n" + d.logs()
	})
	return d, stop
}

// rmtListenAddr finds the bound address in the daemon's JSON log.
func rmtListenAddr(log string) string {
	for _, line := range strings.Split(log, "\n") {
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		line = stripPriority(line)
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.Addr != "" {
			return "http://" + l.Addr
		}
	}
	return ""
}

// stripPriority drops the "<N>" syslog priority a line carries when the
// daemon writes to the journal.
func stripPriority(line string) string {
	if len(line) > 3 && line[0] == '<' && line[2] == '>' && line[1] >= '0' && line[1] <= '7' {
		return line[3:]
	}
	return line
}

// rmtRun runs the built binary in dir with the cleaned environment plus
// env, the way an agent on the host would.
func rmtRun(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Dir = dir
	cmd.Env = rmtEnv(env...)
	return runCmd(t, cmd, stdin)
}

// entity reads GET /api/v1/entities/{type}/{id}.
func (d *rmtDaemon) entity(t *testing.T, typ, id string) (int, wire.Entity) {
	t.Helper()
	resp, err := http.Get(d.base + "/api/v1/entities/" + typ + "/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e wire.Entity
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, e
}

// assertEmptyDir fails if a command left anything in its working
// directory: a remote write must not create ./watchdog.db.
func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("a command left %s in its working directory", e.Name())
	}
}

// rmtAssertRow checks the entity's last audit row.
func rmtAssertRow(t *testing.T, e wire.Entity, from, to, actor, reason string) {
	t.Helper()
	if e.Transitions == nil || len(*e.Transitions) == 0 {
		t.Fatalf("%s/%s has no audit rows", e.Type, e.ID)
	}
	rows := *e.Transitions
	last := rows[len(rows)-1]
	gotFrom := "<nil>"
	if last.From != nil {
		gotFrom = *last.From
	}
	if gotFrom != from || last.To != to || last.Actor != actor || last.ReasonCode != reason {
		t.Errorf("last audit row %s -> %s by %s (%s), want %s -> %s by %s (%s)",
			gotFrom, last.To, last.Actor, last.ReasonCode, from, to, actor, reason)
	}
}

func TestRemoteWritesPrintWhatLocalWritesPrint(t *testing.T) {
	d := rmtStart(t, true)
	work := t.TempDir()
	localDB := filepath.Join(t.TempDir(), "local.db")
	tokenEnv := []string{"WATCHDOG_TOKEN_FILE=" + d.token}

	// The same commands against a local database and through the daemon
	// print the same lines.
	steps := []struct {
		stdin string
		args  []string
		want  string
	}{
		{`{"type":"run","id":"s-1","label":"reviewer","lifecycle":"running","timeout_seconds":900}`,
			[]string{"register", "--json", "-"}, "registered session/s-1: "},
		{`{"type":"session","id":"s-1","label":"reviewer, renamed"}`,
			[]string{"register", "--json", "-"}, "updated session/s-1: "},
		{"", []string{"heartbeat", "session/s-1", "--progress", "step 3 of 7"}, ""},
		{"", []string{"transition", "session/s-1", "aborted", "--reason", "run.aborted.operator", "--message", "stuck on review"},
			"session/s-1: running -> aborted (run.aborted.operator)"},
	}
	for _, s := range steps {
		local := wd(t, s.stdin, append(s.args, "--db", localDB)...)
		remote := rmtRun(t, work, tokenEnv, s.stdin, append(s.args, "--server", d.base)...)
		if local.code != 0 || remote.code != 0 || remote.stderr != "" {
			t.Fatalf("%v:\nlocal  %+v\nremote %+v", s.args, local, remote)
		}
		if remote.stdout != local.stdout {
			t.Errorf("%v: remote printed %q, local %q", s.args, remote.stdout, local.stdout)
		}
		if !strings.HasPrefix(remote.stdout, s.want) || (s.want == "") != (remote.stdout == "") {
			t.Errorf("%v: printed %q, want it to start with %q", s.args, remote.stdout, s.want)
		}
	}

	code, e := d.entity(t, "session", "s-1")
	if code != http.StatusOK {
		t.Fatalf("GET session/s-1: %d", code)
	}
	if e.Lifecycle == nil || *e.Lifecycle != "aborted" || e.Label != "reviewer, renamed" || e.HeartbeatProgress != "step 3 of 7" || e.HeartbeatAt.IsZero() {
		t.Errorf("entity after the remote writes: %+v", e)
	}
	// With auth on the token decides the actor: the orchestrator, although
	// `watchdog transition` writes as admin locally.
	rmtAssertRow(t, e, "running", "aborted", transitions.ActorOrchestrator, "run.aborted.operator")
	if rows := *e.Transitions; rows[len(rows)-1].Message != "stuck on review" {
		t.Errorf("message not recorded: %+v", rows[len(rows)-1])
	}
	assertEmptyDir(t, work)
}

func TestRemoteWritesFromEnvironment(t *testing.T) {
	d := rmtStart(t, true)
	work := t.TempDir()
	env := []string{"WATCHDOG_SERVER=" + d.base, "WATCHDOG_TOKEN_FILE=" + d.token}

	r := rmtRun(t, work, env, `{"type":"session","id":"s-env","lifecycle":"running"}`, "register", "--json", "-")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "registered session/s-env: Running") {
		t.Fatalf("register: %+v", r)
	}
	if r = rmtRun(t, work, env, "", "heartbeat", "session/s-env"); r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("heartbeat: %+v", r)
	}
	r = rmtRun(t, work, env, "", "transition", "session/s-env", "completed", "--expect-from", "running")
	if r.code != 0 || r.stdout != "session/s-env: running -> completed\n" {
		t.Fatalf("transition: %+v", r)
	}
	_, e := d.entity(t, "session", "s-env")
	if e.Lifecycle == nil || *e.Lifecycle != "completed" || e.HeartbeatAt.IsZero() {
		t.Errorf("entity: %+v", e)
	}
	rmtAssertRow(t, e, "running", "completed", transitions.ActorOrchestrator, "")

	// A flag beats the other target's environment variable.
	absent := filepath.Join(t.TempDir(), "absent.db")
	r = rmtRun(t, work, []string{"WATCHDOG_DB=" + absent, "WATCHDOG_TOKEN_FILE=" + d.token}, "", "heartbeat", "session/s-env", "--server", d.base)
	if r.code != 0 {
		t.Errorf("--server with WATCHDOG_DB set: %+v", r)
	}
	if _, err := os.Stat(absent); err == nil {
		t.Error("--server opened the database named by WATCHDOG_DB")
	}
	localDB := filepath.Join(t.TempDir(), "local.db")
	if r = wd(t, `{"type":"session","id":"s-loc"}`, "register", "--json", "-", "--db", localDB); r.code != 0 {
		t.Fatalf("local register: %+v", r)
	}
	r = rmtRun(t, work, []string{"WATCHDOG_SERVER=" + d.base}, "", "heartbeat", "session/s-loc", "--db", localDB)
	if r.code != 0 {
		t.Errorf("--db with WATCHDOG_SERVER set: %+v", r)
	}
	if code, _ := d.entity(t, "session", "s-loc"); code != http.StatusNotFound {
		t.Errorf("--db wrote through the daemon named by WATCHDOG_SERVER (GET %d)", code)
	}
	assertEmptyDir(t, work)
}

func TestRemoteRefusalsChangeNothing(t *testing.T) {
	d := rmtStart(t, true)
	work := t.TempDir()
	dir := t.TempDir()
	wrong := writeFile(t, dir, "wrong-token", "not-the-token\n")
	good := []string{"WATCHDOG_TOKEN_FILE=" + d.token}
	reg := `{"type":"session","id":"s-1","lifecycle":"running"}`
	if r := rmtRun(t, work, good, reg, "register", "--json", "-", "--server", d.base); r.code != 0 {
		t.Fatalf("register: %+v", r)
	}
	// The daemon judges a new entity at first sight (its own write):
	// wait for it, so that the snapshots below see only the refusals.
	testenv.Eventually(t, "the daemon's first look at s-1", ceiling, func() (bool, string) {
		// No pid yet: the look finds liveness unknown, and says so.
		_, e := d.entity(t, "session", "s-1")
		return len(e.State.Reasons) > 0, fmt.Sprintf("%+v", e.State)
	})
	// The same entity in a local database, for the refusals whose line
	// must be the one the local path prints.
	localDB := filepath.Join(dir, "local.db")
	if r := wd(t, reg, "register", "--json", "-", "--db", localDB); r.code != 0 {
		t.Fatalf("local register: %+v", r)
	}

	abort := []string{"transition", "session/s-1", "aborted", "--reason", "run.aborted.operator"}
	tests := []struct {
		name  string
		env   []string
		stdin string
		args  []string // --server is added unless the case sets its own target
		code  int
		want  string
		local bool // the local path prints the very same line
	}{
		{"wrong token transition", []string{"WATCHDOG_TOKEN_FILE=" + wrong}, "", abort, 1, "unauthorized: check WATCHDOG_TOKEN_FILE", false},
		{"wrong token heartbeat", []string{"WATCHDOG_TOKEN_FILE=" + wrong}, "", []string{"heartbeat", "session/s-1"}, 1, "unauthorized", false},
		{"wrong token register", []string{"WATCHDOG_TOKEN_FILE=" + wrong}, `{"type":"session","id":"s-2"}`, []string{"register", "--json", "-"}, 1, "unauthorized", false},
		{"no token transition", nil, "", abort, 1, "unauthorized: check WATCHDOG_TOKEN_FILE", false},
		{"no token heartbeat", nil, "", []string{"heartbeat", "session/s-1"}, 1, "unauthorized", false},
		{"no token register", nil, `{"type":"session","id":"s-2"}`, []string{"register", "--json", "-"}, 1, "unauthorized", false},
		{"token file missing", []string{"WATCHDOG_TOKEN_FILE=" + filepath.Join(dir, "absent")}, "", abort, 1, "WATCHDOG_TOKEN_FILE", false},
		{"unknown entity", good, "", []string{"transition", "session/nope", "aborted", "--reason", "run.aborted.operator"}, 1, "not found", true},
		{"unknown entity heartbeat", good, "", []string{"heartbeat", "session/nope"}, 1, "not found", true},
		{"invalid edge", good, "", []string{"transition", "session/s-1", "pending", "--actor", "orchestrator"}, 1, "running -> pending is not allowed", true},
		{"stale expect-from", good, "", append(abort, "--expect-from", "pending"), 1, "conflict", true},
		{"unknown reason code", good, "", []string{"transition", "session/s-1", "failed", "--reason", "run.failed.gremlins"}, 1, "unknown reason code", true},
		{"unknown lifecycle", good, `{"type":"session","id":"s-3","lifecycle":"exploded"}`, []string{"register", "--json", "-"}, 1, `unknown lifecycle state "exploded"`, true},
		{"unknown type checked before sending", good, `{"type":"widget","id":"w"}`, []string{"register", "--json", "-"}, 1, `unknown entity type "widget"`, true},
		{"--db and --server", good, "", append(abort, "--db", localDB, "--server", d.base), 2, "--db and --server both given", false},
		{"bad server URL", good, "", append(abort, "--server", "ftp://127.0.0.1"), 2, `--server: "ftp://127.0.0.1" is not a daemon URL`, false},
		{"both variables", append([]string{"WATCHDOG_DB=" + localDB, "WATCHDOG_SERVER=" + d.base}, good...), "", abort, 2, "WATCHDOG_DB and WATCHDOG_SERVER are both set", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !hasTarget(args) && !hasServerEnv(tt.env) {
				args = append(append([]string(nil), args...), "--server", d.base)
			}
			before, beforeLocal := readDB(t, d.db), readDB(t, localDB)
			r := rmtRun(t, work, tt.env, tt.stdin, args...)
			assertOneLineError(t, r)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (%s)", r.code, tt.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not say %q", r.stderr, tt.want)
			}
			if !reflect.DeepEqual(before, readDB(t, d.db)) {
				t.Error("a refused command changed the daemon's database")
			}
			if !reflect.DeepEqual(beforeLocal, readDB(t, localDB)) {
				t.Error("a refused remote command changed the local database")
			}
			if tt.local {
				l := wd(t, tt.stdin, append(tt.args, "--db", localDB)...)
				if l.stderr != r.stderr || l.code != r.code {
					t.Errorf("remote said %q (exit %d), local %q (exit %d)", r.stderr, r.code, l.stderr, l.code)
				}
			}
		})
	}
	assertEmptyDir(t, work)
}

func hasTarget(args []string) bool {
	for _, a := range args {
		if a == "--server" || a == "--db" {
			return true
		}
	}
	return false
}

func hasServerEnv(env []string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, "WATCHDOG_SERVER=") {
			return true
		}
	}
	return false
}

func TestRemoteActorWithoutAuth(t *testing.T) {
	d := rmtStart(t, false)
	work := t.TempDir()
	for _, id := range []string{"s-a", "s-b"} {
		doc := `{"type":"session","id":"` + id + `","lifecycle":"running"}`
		if r := rmtRun(t, work, nil, doc, "register", "--json", "-", "--server", d.base); r.code != 0 {
			t.Fatalf("register %s: %+v", id, r)
		}
	}
	// No --actor and no token: this command's default, admin, as locally.
	r := rmtRun(t, work, nil, "", "transition", "session/s-a", "aborted", "--reason", "run.aborted.operator", "--server", d.base)
	if r.code != 0 || r.stdout != "session/s-a: running -> aborted (run.aborted.operator)\n" {
		t.Fatalf("transition s-a: %+v", r)
	}
	_, e := d.entity(t, "session", "s-a")
	rmtAssertRow(t, e, "running", "aborted", transitions.ActorAdmin, "run.aborted.operator")
	// Without auth the body's actor is believed: an explicit --actor admin
	// is recorded, and admin's narrower rights apply.
	r = rmtRun(t, work, nil, "", "transition", "session/s-b", "completed", "--actor", "admin", "--server", d.base)
	assertOneLineError(t, r)
	if !strings.Contains(r.stderr, "an admin may move a session only to failed, aborted, cancelled") {
		t.Errorf("admin completing a session: %q", r.stderr)
	}
	r = rmtRun(t, work, nil, "", "transition", "session/s-b", "cancelled", "--reason", "run.cancelled.operator", "--actor", "admin", "--server", d.base)
	if r.code != 0 {
		t.Fatalf("transition s-b as admin: %+v", r)
	}
	_, e = d.entity(t, "session", "s-b")
	rmtAssertRow(t, e, "running", "cancelled", transitions.ActorAdmin, "run.cancelled.operator")
	assertEmptyDir(t, work)
}

func TestRemoteDaemonNotReachable(t *testing.T) {
	// A port that was free a moment ago and has no listener now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	work := t.TempDir()
	for _, c := range []struct {
		env   []string
		stdin string
		args  []string
	}{
		{nil, `{"type":"session","id":"s-1"}`, []string{"register", "--json", "-", "--server", url}},
		{nil, "", []string{"heartbeat", "session/s-1", "--server", url}},
		{nil, "", []string{"transition", "session/s-1", "aborted", "--reason", "run.aborted.operator", "--server", url}},
		{[]string{"WATCHDOG_SERVER=" + url}, "", []string{"transition", "session/s-1", "aborted", "--expect-from", "running"}},
	} {
		r := rmtRun(t, work, c.env, c.stdin, c.args...)
		assertOneLineError(t, r)
		if r.code != 1 || !strings.Contains(r.stderr, "cannot reach the daemon at "+url+": ") {
			t.Errorf("%v: exit %d, %q", c.args, r.code, r.stderr)
		}
	}
	assertEmptyDir(t, work)
}

// TestRemoteTransitionLostRace drives `watchdog transition --server`
// against a real API whose entity another writer moves just before the
// write: the answer's from names the state the entity really left, with
// no read to go stale and nothing to retry.
func TestRemoteTransitionLostRace(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st}
	if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: "s-1"}, Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	h := api.New(api.Options{Store: st, Writer: w})
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && posts.Add(1) == 1 {
			// The other writer wins the race: pending -> running.
			if _, err := w.Transition(r.Context(), transitions.Request{Type: "session", ID: "s-1", To: "running", Actor: transitions.ActorOrchestrator}); err != nil {
				t.Errorf("racing transition: %v", err)
			}
		}
		h.ServeHTTP(rw, r)
	}))
	defer srv.Close()

	// No token: the server has none, and rmtEnv keeps the test's
	// environment from lending one through WATCHDOG_TOKEN_FILE. The
	// command prints the answer's from and lifecycle: "TYPE/ID: FROM -> TO".
	r := rmtRun(t, t.TempDir(), nil, "", "transition", "session/s-1", "aborted", "--reason", "run.aborted.operator", "--server", srv.URL)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "session/s-1: running -> aborted (run.aborted.operator)" {
		t.Fatalf("got exit %d, stdout %q, stderr %q; want running -> aborted", r.code, r.stdout, r.stderr)
	}
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs, want 1 (the answer says where it came from)", n)
	}
	rows, err := st.Transitions(ctx, "session", "s-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[2].To != "aborted" || rows[2].From == nil || *rows[2].From != "running" {
		t.Errorf("audit rows %+v", rows)
	}
}

// TestRemoteExec: exec through a daemon with auth on registers the run
// with this host's identity of the child, records its end as actor exec,
// and never opens a database; a wrong token leaves the work running,
// unwatched, with one line saying so.
func TestRemoteExec(t *testing.T) {
	d := rmtStart(t, true)
	dir := t.TempDir()
	env := []string{"WATCHDOG_SERVER=" + d.base, "WATCHDOG_TOKEN_FILE=" + d.token}
	r := rmtRun(t, dir, env, "", "exec", "--id", "rx-1", "--timeout", "1h", "--", "sh", "-c", "exit 124")
	if r.code != 124 {
		t.Fatalf("exit %d, want the child's 124 (stderr %q)", r.code, r.stderr)
	}
	assertEmptyDir(t, dir)
	code, e := d.entity(t, "session", "rx-1")
	if code != 200 {
		t.Fatalf("GET: %d", code)
	}
	rmtAssertRow(t, e, "running", "timed_out", "exec", "run.timed_out.deadline")
	if e.PID <= 0 || e.PIDStartTime.IsZero() || e.HostID == "" || e.SupervisorPID <= 0 || e.TimeoutSeconds != 3600 {
		t.Errorf("identity not recorded: pid %d start %v host %q supervisor %d timeout %v", e.PID, e.PIDStartTime, e.HostID, e.SupervisorPID, e.TimeoutSeconds)
	}

	bad := filepath.Join(t.TempDir(), "wrong.token")
	if err := os.WriteFile(bad, []byte("not-the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	r = rmtRun(t, dir, []string{"WATCHDOG_SERVER=" + d.base, "WATCHDOG_TOKEN_FILE=" + bad}, "", "exec", "--id", "rx-2", "--", "touch", marker)
	if r.code != 0 {
		t.Errorf("wrong token: exit %d, want the child's 0", r.code)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("wrong token: the command did not run")
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "not watched") {
		t.Errorf("wrong token: want one line saying it is not watched, got %q", r.stderr)
	}
	if code, _ := d.entity(t, "session", "rx-2"); code != 404 {
		t.Errorf("wrong token: the run was registered anyway (%d)", code)
	}
}
