package e2e

// End-to-end tests of the reading and triage commands through a running
// daemon with auth on: `status` and `attention` with --server print what
// they print from the daemon's database, --host and --open filter alike
// both ways, and `snooze`/`dismiss` change what GET /api/attention serves,
// refused with a wrong token or an unknown fingerprint.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"watchdog/attention"
	"watchdog/internal/testenv"
)

// triageSections keep the daemon still: hourly jobs, and hosts that have
// no daemon of their own stay connected for the test's length.
const triageSections = `thresholds:
  host_disconnected_after: 2h
  host_lost_after: 4h
jobs:
  sweep: "@every 1h"
  enforce_terminal: "@every 1h"
  reap_phantoms: "@every 1h"
  check_schedules: "@every 1h"
  vacuum: "@daily"
`

// triageFleet starts a daemon with auth on and registers, through it,
// two hosts' sessions: on each one running and one failed.
func triageFleet(t *testing.T) (*rmtDaemon, []string) {
	t.Helper()
	d := rmtStartWith(t, true, triageSections)
	env := []string{"WATCHDOG_SERVER=" + d.base, "WATCHDOG_TOKEN_FILE=" + d.token}
	work := t.TempDir()
	for _, h := range []string{"a", "b"} {
		for _, id := range []string{h + "-run", h + "-fail"} {
			doc := fmt.Sprintf(`{"type":"session","id":%q,"label":"job %s","lifecycle":"running","host_id":"host-%s"}`, id, id, h)
			if r := rmtRun(t, work, env, doc, "register", "--json", "-"); r.code != 0 {
				t.Fatalf("register %s: %+v", id, r)
			}
		}
		if r := rmtRun(t, work, env, "", "transition", "session/"+h+"-fail", "failed", "--reason", "run.failed.exit_nonzero", "--message", "exit 3"); r.code != 0 {
			t.Fatalf("fail %s: %+v", h, r)
		}
	}
	return d, env
}

// sameOutput runs the command against the daemon's database and through
// the daemon until both print the same (an age may tick between the two
// runs), with norm applied to both outputs, and returns the remote one.
func sameOutput(t *testing.T, d *rmtDaemon, env []string, norm func(string) string, args ...string) string {
	t.Helper()
	var remote string
	testenv.Eventually(t, fmt.Sprintf("%v the same through the daemon as from its database", args), rmtDeadline, func() (bool, string) {
		local := rmtRun(t, t.TempDir(), nil, "", append(args, "--db", d.db)...)
		r := rmtRun(t, t.TempDir(), env, "", append(args, "--server", d.base)...)
		if local.code != 0 || r.code != 0 || r.stderr != "" {
			t.Fatalf("%v:\nlocal  %+v\nremote %+v", args, local, r)
		}
		remote = r.stdout
		l, rn := norm(local.stdout), norm(r.stdout)
		return l == rn, fmt.Sprintf("local:\n%s\nremote:\n%s", l, rn)
	})
	return remote
}

func asIs(s string) string { return s }

// withoutMoments drops the members that say when a document was made
// (generated_at, evaluated_at, a snooze action's ready until): two reads
// a moment apart differ there and nowhere else.
func withoutMoments(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "not JSON: " + s
	}
	var drop func(any)
	drop = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "generated_at")
			delete(x, "evaluated_at")
			delete(x, "until")
			// Who judged: only a read from the database says (the
			// daemon is the judge through --server).
			delete(x, "judge")
			for _, c := range x {
				drop(c)
			}
		case []any:
			for _, c := range x {
				drop(c)
			}
		}
	}
	drop(v)
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestReadCommandsThroughTheDaemon(t *testing.T) {
	d, env := triageFleet(t)

	for _, c := range []struct {
		args         []string
		norm         func(string) string
		want, absent []string
	}{
		{[]string{"status"}, asIs,
			[]string{"PID", "HOST", "SINCE", "HEARTBEAT", "a-run", "b-fail", "host-a", "host-b", "Failed"}, nil},
		{[]string{"status", "--json"}, withoutMoments, []string{`"transitions"`, `"reason_code": "run.failed.exit_nonzero"`}, nil},
		{[]string{"status", "--host", "host-b"}, asIs, []string{"b-run", "b-fail"}, []string{"a-run", "a-fail", "host-a"}},
		{[]string{"status", "--open"}, asIs, []string{"a-run", "b-run"}, []string{"a-fail", "b-fail"}},
		{[]string{"status", "--open", "--host", "host-a", "--json"}, withoutMoments, []string{`"a-run"`, `"total": 1`}, []string{"b-run", "a-fail"}},
		{[]string{"attention"}, asIs,
			[]string{"CRITICAL · 2 items", "session:a-fail:run.failed.exit_nonzero", "session:b-fail:run.failed.exit_nonzero"}, nil},
		{[]string{"attention", "--json"}, withoutMoments, []string{`"fingerprint": "session:a-fail:run.failed.exit_nonzero"`}, nil},
		{[]string{"attention", "--host", "host-a"}, asIs, []string{"ATTENTION QUEUE · 1 item", "session:a-fail:"}, []string{"b-fail"}},
	} {
		out := sameOutput(t, d, env, c.norm, c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v lacks %q:\n%s", c.args, w, out)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(out, a) {
				t.Errorf("%v shows %q:\n%s", c.args, a, out)
			}
		}
	}

	// The daemon's own thresholds apply through it: a local window given
	// with --server would be ignored, so it is refused.
	r := rmtRun(t, t.TempDir(), env, "", "attention", "--failure-window", "1h")
	if r.code != 2 || !strings.Contains(r.stderr, "--failure-window reads a local database") {
		t.Errorf("--failure-window with WATCHDOG_SERVER: %+v", r)
	}
	r = rmtRun(t, t.TempDir(), env, "", "status", "--db", d.db, "--server", d.base)
	if r.code != 2 || !strings.Contains(r.stderr, "--db and --server both given") {
		t.Errorf("--db with --server: %+v", r)
	}
}

func TestTriageThroughTheDaemon(t *testing.T) {
	d, env := triageFleet(t)
	work := t.TempDir()
	fpA := attention.Fingerprint("session", "a-fail", "run.failed.exit_nonzero")
	fpB := attention.Fingerprint("session", "b-fail", "run.failed.exit_nonzero")
	served := func(query string) []string {
		var fps []string
		for _, it := range d.queue(t, query).Items {
			fps = append(fps, it.Fingerprint)
		}
		return fps
	}
	if got := fmt.Sprint(served("")); got != fmt.Sprint([]string{fpA, fpB}) && got != fmt.Sprint([]string{fpB, fpA}) {
		t.Fatalf("queue before: %s", got)
	}

	// Failure cases: nothing changes.
	wrong := writeFile(t, t.TempDir(), "wrong.token", "not-the-token\n")
	for _, c := range []struct {
		name   string
		env    []string
		args   []string
		code   int
		stderr string
	}{
		{"wrong token", []string{"WATCHDOG_SERVER=" + d.base, "WATCHDOG_TOKEN_FILE=" + wrong}, []string{"snooze", fpA}, 1, "unauthorized"},
		{"no token", []string{"WATCHDOG_SERVER=" + d.base, "WATCHDOG_TOKEN_FILE=" + filepath.Join(work, "none")}, []string{"dismiss", fpA}, 1, ""},
		{"unknown fingerprint", env, []string{"dismiss", "session:a-run:run.failed.exit_nonzero"}, 1, `no attention item has fingerprint "session:a-run:run.failed.exit_nonzero"`},
		{"not a fingerprint", env, []string{"snooze", "session/a-fail"}, 2, "is not <entity_type>:<entity_id>:<reason_code>"},
		{"bad --for", env, []string{"snooze", fpA, "--for", "soon"}, 2, `"soon" is not a duration`},
	} {
		r := rmtRun(t, work, c.env, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: %+v, want exit %d and one line with %q", c.name, r, c.code, c.stderr)
		}
	}
	if got := served(""); len(got) != 2 {
		t.Fatalf("a refused triage changed the queue: %v", got)
	}

	// Snooze one, dismiss the other: each leaves the queue the daemon
	// serves, and stays listed as hidden with include_dismissed.
	r := rmtRun(t, work, env, "", "snooze", fpA, "--for", "2d")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "snoozed "+fpA+" until ") {
		t.Fatalf("snooze: %+v", r)
	}
	if got := fmt.Sprint(served("")); got != fmt.Sprint([]string{fpB}) {
		t.Errorf("after the snooze the queue is %s", got)
	}
	r = rmtRun(t, work, env, "", "dismiss", fpB)
	if r.code != 0 || r.stdout != "dismissed "+fpB+" until its status changes\n" {
		t.Fatalf("dismiss: %+v", r)
	}
	if got := served(""); len(got) != 0 {
		t.Errorf("after the dismissal the queue is %v", got)
	}
	q := d.queue(t, "include_dismissed=true")
	a, okA := item(q, fpA)
	b, okB := item(q, fpB)
	if !okA || !okB || !a.Dismissed || a.SnoozedUntil.IsZero() || !b.Dismissed || !b.SnoozedUntil.IsZero() {
		t.Errorf("hidden items: %+v", q.Items)
	}
	// The CLI reads the same queue through the daemon.
	r = rmtRun(t, work, env, "", "attention")
	if r.code != 0 || r.stdout != "attention queue is empty\n" {
		t.Errorf("attention after triage: %+v", r)
	}
	assertEmptyDir(t, work)
}

// TestTriageOnTheDatabase: with --db, snooze and dismiss write the same
// dismissal rows under the same rule, and attention reads them back.
func TestTriageOnTheDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	for _, id := range []string{"s-1", "s-2"} {
		if r := wd(t, `{"type":"session","id":"`+id+`","lifecycle":"running"}`, "register", "--db", db, "--json", "-"); r.code != 0 {
			t.Fatalf("register: %+v", r)
		}
		if r := wd(t, "", "transition", "session/"+id, "failed", "--reason", "run.failed.exit_nonzero", "--db", db); r.code != 0 {
			t.Fatalf("transition: %+v", r)
		}
	}
	if r := wd(t, "", "snooze", "session:s-1:run.failed.exit_nonzero", "--for", "90m", "--db", db); r.code != 0 || !strings.HasPrefix(r.stdout, "snoozed session:s-1:") {
		t.Fatalf("snooze: %+v", r)
	}
	r := wd(t, "", "attention", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "ATTENTION QUEUE · 1 item") || !strings.Contains(r.stdout, "session:s-2:run.failed.exit_nonzero") {
		t.Errorf("attention after the snooze: %+v", r)
	}
	if r := wd(t, "", "dismiss", "session:s-2:run.failed.exit_nonzero", "--db", db); r.code != 0 {
		t.Fatalf("dismiss: %+v", r)
	}
	if r := wd(t, "", "attention", "--db", db); r.code != 0 || r.stdout != "attention queue is empty\n" {
		t.Errorf("attention after the dismissal: %+v", r)
	}
	r = wd(t, "", "dismiss", "session:s-2:run.health.stalled", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, `no attention item has fingerprint "session:s-2:run.health.stalled"`) {
		t.Errorf("unknown fingerprint: %+v", r)
	}
	r = wd(t, "", "snooze", "session:s-1:run.failed.exit_nonzero", "--db", filepath.Join(t.TempDir(), "missing.db"))
	if r.code != 1 || !strings.Contains(r.stderr, "no database at") {
		t.Errorf("missing database: %+v", r)
	}
}

// TestStatusWatch: --watch keeps reading, so an entity registered while
// it runs shows in a later frame, and an interrupt ends it with exit 0.
func TestStatusWatch(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	if r := wd(t, `{"type":"session","id":"first","lifecycle":"running"}`, "register", "--db", db, "--json", "-"); r.code != 0 {
		t.Fatalf("register: %+v", r)
	}
	outPath := filepath.Join(dir, "frames")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(binPath, "status", "--watch", "--every", "100ms", "--db", db)
	cmd.Env = rmtEnv()
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	frames := func() string { b, _ := os.ReadFile(outPath); return string(b) }
	testenv.Eventually(t, "a first frame", rmtDeadline, func() (bool, string) {
		return strings.Contains(frames(), "first"), frames()
	})
	if r := wd(t, `{"type":"session","id":"second","lifecycle":"running"}`, "register", "--db", db, "--json", "-"); r.code != 0 {
		t.Fatalf("register: %+v", r)
	}
	testenv.Eventually(t, "a frame with the second entity", rmtDeadline, func() (bool, string) {
		return strings.Contains(frames(), "second"), frames()
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch ended with %v, want exit 0", err)
	}
	if f := frames(); strings.Count(f, "every 100ms · "+db) < 2 || strings.Contains(f, "\x1b[") {
		t.Errorf("frames into a file: want at least two headers and no screen clearing:\n%s", f)
	}
	if r := wd(t, "", "status", "--watch", "--json", "--db", db); r.code != 2 {
		t.Errorf("--watch --json: %+v", r)
	}
}
