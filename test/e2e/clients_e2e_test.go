package e2e

// docs/reference/clients.md's examples, run as written (issue 40): its sh
// blocks with bash and its Python with python3 (the standard library
// only), against a real daemon with a token, over TCP and over its local
// socket; each entity they register ends completed.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// docBlocks are the fenced blocks of a Markdown file in lang.
func docBlocks(t *testing.T, path, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur *strings.Builder
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case cur == nil && line == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}

func TestClientExamplesRun(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 not found: the Python example needs it (Debian's python3)")
	}
	d := rmtStart(t, true)
	env := rmtEnv("WATCHDOG_URL="+d.base, "WATCHDOG_TOKEN_FILE="+d.token, "WATCHDOG_SOCK="+filepath.Join(filepath.Dir(d.db), "watchdog.sock"))
	const doc = "../../docs/reference/clients.md"

	sh := docBlocks(t, doc, "sh")
	if len(sh) < 3 {
		t.Fatalf("%s has %d sh blocks, want the defaults, TCP and the socket", doc, len(sh))
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(sh, "\n"))
	cmd.Dir, cmd.Env = t.TempDir(), env
	if r := runCmd(t, cmd, ""); r.code != 0 {
		t.Fatalf("the curl examples: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	py := docBlocks(t, doc, "python")
	if len(py) != 1 {
		t.Fatalf("%s has %d python blocks, want 1", doc, len(py))
	}
	cmd = exec.Command("python3", "-c", py[0])
	cmd.Dir, cmd.Env = t.TempDir(), env
	r := runCmd(t, cmd, "")
	if r.code != 0 {
		t.Fatalf("the Python example: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"py-tcp Completed from running", "py-sock Completed from running"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the Python example printed %q, want %q", r.stdout, want)
		}
	}
	for _, id := range []string{"curl-tcp", "curl-sock", "py-tcp", "py-sock"} {
		if e := d.must(t, "session", id); e.Lifecycle == nil || *e.Lifecycle != "completed" || e.HeartbeatAt.IsZero() {
			t.Errorf("session/%s after the examples: lifecycle %v, heartbeat %v; want completed, heartbeated", id, e.Lifecycle, e.HeartbeatAt)
		}
	}
}
