package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
)

// The trust model (issue 36, docs/security.md), end to end: the built
// daemon as root, its local socket, scoped tokens, real processes of a
// real second user (nobody), and the reaper's signals recorded by the
// processes that receive them.

const nobody = 65534

// trustDaemon is a daemon whose socket and binary a second user can
// reach: both in a directory of mode 0755.
type trustDaemon struct {
	*svDaemon
	dir, sock, bin string
	tokens         map[string]string // name → secret
}

// startTrustDaemon starts `watchdog serve` as root with the reaper's
// kill_leftovers on (leftover_grace and kill_grace short, the sweep on
// its default schedule: the signals must not wait for it), the local
// socket, the admin token and three scoped tokens.
func startTrustDaemon(t *testing.T) *trustDaemon {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: a second user's processes, and a daemon that may signal them")
	}
	// Not t.TempDir: its parent is 0700, which nobody cannot pass.
	dir, err := os.MkdirTemp("", "watchdog-trust-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "watchdog")
	copyFile(t, binPath, bin, 0o755)
	d := &trustDaemon{dir: dir, sock: filepath.Join(dir, "api.sock"), bin: bin, tokens: map[string]string{}}
	var toks strings.Builder
	for _, tk := range []struct{ name, scopes, uids string }{
		{"ci", "[report]", "[]"},
		{"nobody-agent", "[report]", fmt.Sprintf("[%d]", nobody)},
		{"oncall", "[read, triage]", "[]"},
	} {
		secret := "secret-of-" + tk.name
		d.tokens[tk.name] = secret
		f := filepath.Join(dir, tk.name+".token")
		if err := os.WriteFile(f, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&toks, "    - {name: %s, file: %s, scopes: %s, uids: %s}\n", tk.name, f, tk.scopes, tk.uids)
	}
	db := filepath.Join(dir, "watchdog.db")
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf(`store:
  dsn: %q
listen: 127.0.0.1:0
listen_unix: %q
auth:
  tokens:
%sthresholds:
  terminal_grace: 1h
reaper:
  kill_leftovers: true
  leftover_grace: 2s
  kill_grace: 3s
log:
  level: info
  format: json
`, db, d.sock, toks.String()))
	d.svDaemon = svStart(t, cfg, db)
	adm, err := os.ReadFile(filepath.Join(dir, "watchdog.token"))
	if err != nil {
		t.Fatal(err)
	}
	d.tokens["admin"] = strings.TrimSpace(string(adm))
	return d
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// cli runs the daemon's binary as uid with its socket as the default
// door (no --db, no --server: the command finds it by WATCHDOG_SOCKET).
func (d *trustDaemon) cli(t *testing.T, uid int, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(d.bin, args...)
	cmd.Env = svEnv("WATCHDOG_SOCKET="+d.sock, "HOME=/")
	cmd.Dir = "/"
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	return runCmd(t, cmd, stdin)
}

// socketDo sends a request over the daemon's socket as root.
func (d *trustDaemon) socketDo(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	c := &http.Client{Timeout: ceiling, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.sock)
	}}}
	req, err := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s over the socket: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// tcp sends a request over TCP with the named token ("" for none).
func (d *trustDaemon) tcp(t *testing.T, method, path, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, d.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+d.tokens[token])
	} else {
		req.Header.Set(NoAuth, "1")
	}
	resp, err := svHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// trustEntity is what these tests read of an entity.
type trustEntity struct {
	Owner    string `json:"owner"`
	OwnerUID *int   `json:"owner_uid"`
	State    struct {
		Lifecycle string `json:"lifecycle"`
		Delivery  string `json:"delivery"`
		Reasons   []struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Evidence []struct {
				Detail string `json:"detail"`
			} `json:"evidence"`
		} `json:"reasons"`
	} `json:"state"`
	Transitions []struct {
		Actor     string `json:"actor"`
		Principal string `json:"principal"`
		To        string `json:"to"`
	} `json:"transitions"`
}

func (d *trustDaemon) read(t *testing.T, typ, id string) (trustEntity, bool) {
	t.Helper()
	status, b := d.tcp(t, "GET", "/api/v1/entities/"+typ+"/"+id, "admin", "")
	if status == http.StatusNotFound {
		return trustEntity{}, false
	}
	if status != http.StatusOK {
		t.Fatalf("GET %s/%s: %d %s", typ, id, status, b)
	}
	var e trustEntity
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("GET %s/%s: %v", typ, id, err)
	}
	return e, true
}

// recorder is a process of uid that writes "TERM <unix seconds>" to its
// log at each SIGTERM and goes on, so that only a SIGKILL ends it; with
// parent, it runs under a shell of uid that the test lets exit (leaving
// it behind as that shell's leftover).
type recorder struct {
	pid    int
	log    string
	parent *exec.Cmd
	in     io.WriteCloser
}

const recorderScript = `trap 'echo TERM $(date +%s.%N) >> "$LOG"' TERM; echo up >> "$LOG"; while :; do sleep 0.05; done`

func startRecorder(t *testing.T, dir string, uid int, withParent bool) *recorder {
	t.Helper()
	log := filepath.Join(dir, fmt.Sprintf("signals-%d.log", time.Now().UnixNano()))
	if err := os.WriteFile(log, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(log, 0o666); err != nil {
		t.Fatal(err)
	}
	script := recorderScript
	if withParent {
		// The shell starts the recorder in the background and waits for
		// its stdin to end.
		script = `sh -c '` + strings.ReplaceAll(recorderScript, `'`, `'"'"'`) + `' & read x`
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "LOG="+log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &recorder{log: log, parent: cmd, in: in}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if r.pid > 0 {
			_ = syscall.Kill(r.pid, syscall.SIGKILL)
		}
	})
	testenv.Eventually(t, "the recorder up", ceiling, func() (bool, string) {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "up"), string(b)
	})
	if !withParent {
		r.pid = cmd.Process.Pid
		return r
	}
	// The recorder is the shell's one child.
	testenv.Eventually(t, "the recorder's pid", ceiling, func() (bool, string) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return false, "no child yet"
		}
		r.pid, _ = strconv.Atoi(f[0])
		return r.pid > 0, string(b)
	})
	return r
}

// exitParent lets the recorder's shell exit (its read sees the end).
func (r *recorder) exitParent(t *testing.T) {
	t.Helper()
	r.in.Close()
	_ = r.parent.Wait()
}

func (r *recorder) terms() []float64 {
	b, _ := os.ReadFile(r.log)
	var out []float64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TERM "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out = append(out, f)
			}
		}
	}
	return out
}

func (r *recorder) alive() bool {
	if syscall.Kill(r.pid, 0) != nil {
		return false
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.pid))
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// TestTrustOwnershipOverTheSocket: over the socket a user registers its
// own process (audited as uid:65534 (nobody)) and is refused another
// user's, with nothing stored; pid 1 and the daemon's pid are refused
// over every door (socket, TCP, the CLI on the store), nothing stored.
func TestTrustOwnershipOverTheSocket(t *testing.T) {
	d := startTrustDaemon(t)
	mine := testenv.SleepAs(t, nobody)
	roots := svSleep(t)

	r := d.register(t, nobody, "theirs", roots.pid)
	if r.code == 0 || !strings.Contains(r.stderr, "runs as uid 0") {
		t.Errorf("nobody registers root's pid: exit %d %s", r.code, r.stderr)
	}
	if _, ok := d.read(t, "session", "theirs"); ok {
		t.Error("a refused registration was stored")
	}
	if r := d.register(t, nobody, "mine", mine.Process.Pid); r.code != 0 {
		t.Fatalf("nobody registers its own pid: exit %d %s", r.code, r.stderr)
	}
	e, _ := d.read(t, "session", "mine")
	if e.Owner != "uid:65534 (nobody)" || e.OwnerUID == nil || *e.OwnerUID != nobody || len(e.Transitions) != 1 || e.Transitions[0].Principal != "uid:65534 (nobody)" {
		t.Errorf("nobody's registration: owner %q uid %v, rows %+v", e.Owner, e.OwnerUID, e.Transitions)
	}
	// nobody may not end root's entity either.
	svRegisterRoot(t, d, "roots", roots.pid)
	if r := d.cli(t, nobody, "", "transition", "session/roots", "completed"); r.code == 0 {
		t.Errorf("nobody ended root's entity")
	}
	if e, _ := d.read(t, "session", "roots"); e.State.Lifecycle != "running" {
		t.Errorf("root's entity after nobody's refused end: %s", e.State.Lifecycle)
	}

	daemonPID := d.cmd.Process.Pid
	for _, pid := range []int{1, daemonPID} {
		id := fmt.Sprintf("refused-%d", pid)
		doc := fmt.Sprintf(`{"type":"session","id":%q,"pid":%d}`, id, pid)
		if r := d.cli(t, 0, doc, "register", "--json", "-"); r.code == 0 || !strings.Contains(r.stderr, "never an entity's") {
			t.Errorf("socket, root, pid %d: exit %d %s", pid, r.code, r.stderr)
		}
		if status, b := d.tcp(t, "POST", "/api/v1/entities", "admin", doc); status != http.StatusUnprocessableEntity || !strings.Contains(string(b), "pid_refused") {
			t.Errorf("TCP, admin token, pid %d: %d %s", pid, status, b)
		}
		if r := wd(t, doc, "register", "--db", d.db, "--json", "-"); r.code == 0 || !strings.Contains(r.stderr, "never an entity's") {
			t.Errorf("CLI on the store, pid %d: exit %d %s", pid, r.code, r.stderr)
		}
		if _, ok := d.read(t, "session", id); ok {
			t.Errorf("pid %d was stored", pid)
		}
	}
}

// svRegisterRoot registers a running session with pid as root over the
// socket.
func svRegisterRoot(t *testing.T, d *trustDaemon, id string, pid int) {
	t.Helper()
	if r := d.register(t, 0, id, pid); r.code != 0 {
		t.Fatalf("register %s: exit %d %s", id, r.code, r.stderr)
	}
}

// register registers a running session with pid as uid over the socket.
func (d *trustDaemon) register(t *testing.T, uid int, id string, pid int) result {
	t.Helper()
	return d.cli(t, uid, fmt.Sprintf(`{"type":"session","id":%q,"pid":%d,"lifecycle":"running"}`, id, pid), "register", "--json", "-")
}

// TestTrustKillsOnlyWhatTheDaemonSaw: with kill_leftovers on,
//   - a socket peer's own leftover gets SIGTERM, then SIGKILL kill_grace
//     later, with the sweep on its default minute;
//   - a process named in a client's evidence is never signalled;
//   - a root registered over TCP by a token without uids has its leftover
//     reported, never signalled.
func TestTrustKillsOnlyWhatTheDaemonSaw(t *testing.T) {
	d := startTrustDaemon(t)

	// The socket peer's own tree.
	own := startRecorder(t, d.dir, nobody, true)
	if r := d.register(t, nobody, "own", own.parent.Process.Pid); r.code != 0 {
		t.Fatalf("register: %s", r.stderr)
	}
	// A token without uids, over TCP.
	ci := startRecorder(t, d.dir, nobody, true)
	if status, b := d.tcp(t, "POST", "/api/v1/entities", "ci", fmt.Sprintf(`{"type":"session","id":"ci","pid":%d,"lifecycle":"running"}`, ci.parent.Process.Pid)); status != http.StatusCreated {
		t.Fatalf("register over TCP: %d %s", status, b)
	}
	// A bystander, and an entity whose end names it in its evidence.
	bystander := startRecorder(t, d.dir, nobody, false)
	victim := testenv.SleepAs(t, nobody)
	if r := d.register(t, nobody, "claims", victim.Process.Pid); r.code != 0 {
		t.Fatalf("register: %s", r.stderr)
	}
	ticks := startTicks(bystander.pid)
	end := fmt.Sprintf(`{"to":"completed","reason":{"code":"run.completed.exit_zero","evidence":[{"kind":"tool_result","id":"pid:%d:%d","detail":"a leftover"}]}}`, bystander.pid, ticks)
	if status, b := d.socketDo(t, "POST", "/api/v1/entities/session/claims/transitions", end); status != http.StatusOK {
		t.Fatalf("the end naming the bystander: %d %s", status, b)
	}

	// Give the daemon its processes' trees, then let the roots go.
	time.Sleep(500 * time.Millisecond)
	own.exitParent(t)
	ci.exitParent(t)

	var termAt float64
	testenv.Eventually(t, "the socket peer's leftover got SIGTERM", ceiling, func() (bool, string) {
		if ts := own.terms(); len(ts) > 0 {
			termAt = ts[0]
			return true, ""
		}
		return false, "no SIGTERM yet"
	})
	testenv.Eventually(t, "the socket peer's leftover ended", ceiling, func() (bool, string) { return !own.alive(), "still alive" })
	deadAt := float64(time.Now().UnixNano()) / 1e9
	if gap := deadAt - termAt; gap < 3-0.5 {
		t.Errorf("SIGKILL %.2fs after SIGTERM, want kill_grace (3s) apart", gap)
	}
	if n := len(own.terms()); n != 1 {
		t.Errorf("%d SIGTERMs, want one", n)
	}
	// Well past leftover_grace + kill_grace since the roots ended: the
	// bystander and the token's leftover got nothing.
	time.Sleep(6 * time.Second)
	for name, r := range map[string]*recorder{"the bystander named in evidence": bystander, "the uid-less token's leftover": ci} {
		if !r.alive() || len(r.terms()) != 0 {
			t.Errorf("%s was signalled: alive %t, SIGTERMs %v", name, r.alive(), r.terms())
		}
	}
	e, _ := d.read(t, "session", "ci")
	reported := false
	for _, r := range e.State.Reasons {
		if r.Code == "run.health.leftover_processes" {
			reported = true
		}
	}
	if !reported {
		t.Errorf("the uid-less token's leftover is not reported: %+v", e.State.Reasons)
	}
	if e.Owner != "token:ci" || e.OwnerUID != nil {
		t.Errorf("the token's entity: owner %q uid %v", e.Owner, e.OwnerUID)
	}
}

// TestTrustScopesAndFiles: reads need a principal, and a read shows no
// fact of a root-only file to the user who named it; a report token is
// 403 on snooze and dismiss, a triage token succeeds, and the audit and
// the triage log name each token.
func TestTrustScopesAndFiles(t *testing.T) {
	d := startTrustDaemon(t)
	// nobody points one contract at /etc (shadow's content is root's),
	// another into a directory only root may enter: its names, sizes,
	// contents and lock are root's to know.
	private := filepath.Join(d.dir, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"secret.json": "not json at all", "id.key": "k", ".lock": ""} {
		if err := os.WriteFile(filepath.Join(private, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mine := testenv.SleepAs(t, nobody)
	for id, doc := range map[string]string{
		"etc":     `"artifacts_root":"/etc","artifacts":[{"path":"shadow","kind":"json"}]`,
		"private": fmt.Sprintf(`"artifacts_root":%q,"artifacts":[{"path":"secret.json","kind":"json"},{"path":"*.key","min_bytes":100000}],"lock_files":[".lock"]`, private),
	} {
		reg := fmt.Sprintf(`{"type":"session","id":%q,"pid":%d,"lifecycle":"running",%s}`, id, mine.Process.Pid, doc)
		if r := d.cli(t, nobody, reg, "register", "--json", "-"); r.code != 0 {
			t.Fatalf("register %s: %s", id, r.stderr)
		}
		if status, _ := d.tcp(t, "GET", "/api/v1/entities/session/"+id, "", ""); status != http.StatusUnauthorized {
			t.Errorf("an unauthenticated read of %s: %d, want 401", id, status)
		}
		if r := d.cli(t, nobody, "", "transition", "session/"+id, "completed"); r.code != 0 {
			t.Fatalf("end %s: %s", id, r.stderr)
		}
		_, b := d.socketDo(t, "GET", "/api/v1/entities/session/"+id, "")
		body := string(b)
		for _, leak := range []string{"not valid JSON", "id.key", "bytes <", "still exists", "modified"} {
			if strings.Contains(body, leak) {
				t.Errorf("the read of %s tells a fact of a root-only file (%q):\n%s", id, leak, body)
			}
		}
		if !strings.Contains(body, "permission denied") {
			t.Errorf("the read of %s does not say the files could not be examined:\n%s", id, body)
		}
	}

	// Scopes.
	if status, b := d.tcp(t, "POST", "/api/v1/entities", "ci", `{"type":"session","id":"triaged","lifecycle":"running"}`); status != http.StatusCreated {
		t.Fatalf("register with ci: %d %s", status, b)
	}
	if status, b := d.tcp(t, "POST", "/api/v1/entities/session/triaged/transitions", "ci", `{"to":"failed","reason":{"code":"run.failed.exit_nonzero"}}`); status != http.StatusOK {
		t.Fatalf("fail with ci: %d %s", status, b)
	}
	fp := `{"fingerprint":"session:triaged:run.failed.exit_nonzero","for":3600}`
	for _, path := range []string{"/api/attention/snooze", "/api/attention/dismiss"} {
		if status, b := d.tcp(t, "POST", path, "ci", fp); status != http.StatusForbidden {
			t.Errorf("POST %s with a report token: %d %s", path, status, b)
		}
	}
	// nobody, on the socket, may triage its own entities' items only.
	if r := d.cli(t, nobody, "", "snooze", "session:triaged:run.failed.exit_nonzero", "--for", "1h"); r.code == 0 || !strings.Contains(r.stderr, "another user's") {
		t.Errorf("nobody snoozes another's item over the socket: exit %d %s", r.code, r.stderr)
	}
	if status, b := d.tcp(t, "POST", "/api/attention/snooze", "oncall", fp); status != http.StatusOK {
		t.Errorf("snooze with a triage token: %d %s", status, b)
	}
	e, _ := d.read(t, "session", "triaged")
	for _, row := range e.Transitions {
		if row.Principal != "token:ci" {
			t.Errorf("audit row to %s names %q, want token:ci", row.To, row.Principal)
		}
	}
	_, lb := d.tcp(t, "GET", "/api/attention/triage", "oncall", "")
	if !strings.Contains(string(lb), `"actor":"token:oncall"`) {
		t.Errorf("the triage log does not name token:oncall: %s", lb)
	}

	// A token rotated by rewriting its file and reloading (SIGHUP): the
	// old secret is refused from then on, the new one accepted.
	old := d.tokens["oncall"]
	if err := os.WriteFile(filepath.Join(d.dir, "oncall.token"), []byte("rotated-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.signal(syscall.SIGHUP)
	d.tokens["oncall"] = "rotated-secret"
	testenv.Eventually(t, "the rotated token accepted", ceiling, func() (bool, string) {
		status, b := d.tcp(t, "GET", "/api/attention", "oncall", "")
		return status == http.StatusOK, fmt.Sprint(status, string(b))
	})
	d.tokens["oncall"] = old
	if status, _ := d.tcp(t, "GET", "/api/attention", "oncall", ""); status != http.StatusUnauthorized {
		t.Errorf("the rotated-out token: %d, want 401", status)
	}
}
