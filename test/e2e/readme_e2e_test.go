package e2e

// The README's shell examples, and those of the pages its usage moved to,
// run as shown (issue 39): each ```sh block of readmeDocs is either run
// with bash, against the built binary as `watchdog` on PATH and a real
// daemon started as the README's set-up starts it, its host paths
// (/var/lib/watchdog, /etc/watchdog, /srv, /run) pointed into a temporary
// directory; or skipped for a reason this test names (the build and system
// commands CI runs itself). A new block that is neither fails the test,
// and so does a skip that no block uses.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
)

// readmeDocs are the pages whose ```sh blocks are run: the README (its
// set-up and quick start) and the pages its usage lives in. The README's
// blocks run in the daemon's own directory, as its quick start tells the
// reader; the others' in a directory of their own.
var readmeDocs = []string{
	"../../README.md",
	"../../docs/guide.md",
	"../../docs/development.md",
	"../../docs/bench.md",
}

// readmeSkipped are the blocks not run here, by their first command, and
// why: each is run by CI itself or needs what a test must not touch.
var readmeSkipped = map[string]string{
	"go run ./cmd/watchdog serve": "the README's set-up: run below as the built binary's `watchdog serve` (go run builds the same main)",
	"WATCHDOG_TEST_PG_DSN=":       "needs a PostgreSQL server of the reader's; the tests start their own cluster",
	"make deb":                    "make deb-test builds, installs and purges the package",
	"make build":                  "installs into /usr/local/bin; make build is what the e2e binary is",
	"make bench":                  "the benchmarks, minutes long; make bench runs them",
	"cd live && go test":          "a Go benchmark of the live view, minutes long; GOBENCH=1 make bench runs the benchmarks",
}

func TestReadmeExamplesRun(t *testing.T) {
	// The README's set-up: `watchdog serve` with no config in an empty
	// directory, on 127.0.0.1:9715 as the README says.
	srv := t.TempDir()
	serve := exec.Command(binPath, "serve")
	serve.Dir, serve.Env = srv, rmtEnv()
	logf, err := os.Create(filepath.Join(srv, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	serve.Stdout, serve.Stderr = logf, logf
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		_ = serve.Wait()
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(srv, "serve.log"))
			t.Logf("serve's log:\n%s", b)
		}
	})
	testenv.Eventually(t, "the quick start's daemon ready on 127.0.0.1:9715", ceiling, func() (bool, string) {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://127.0.0.1:9715/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})

	// `watchdog` on PATH, as the README has the reader install it.
	bin := t.TempDir()
	if err := os.Symlink(binPath, filepath.Join(bin, "watchdog")); err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../../deploy/config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	usedSkips := map[string]bool{}
	for _, doc := range readmeDocs {
		name := strings.TrimPrefix(doc, "../../")
		blocks := docBlocks(t, doc, "sh")
		if len(blocks) == 0 {
			t.Errorf("%s has no ```sh block: drop it from readmeDocs, or the test reads the wrong file", name)
		}
		for i, block := range blocks {
			first := strings.TrimSpace(strings.SplitN(block, "\n", 2)[0])
			if prefix, why := skippedFor(first); why != "" {
				usedSkips[prefix] = true
				t.Logf("%s block %d (%s): not run: %s", name, i, first, why)
				continue
			}
			ran++
			// README_block1, guide_block3: no "#" in a name, which would
			// reach the temporary directories' paths.
			t.Run(fmt.Sprintf("%s_block%d", strings.TrimSuffix(filepath.Base(name), ".md"), i), func(t *testing.T) {
				runDocBlock(t, name, i, block, srv, bin, example, serve.Process.Pid)
			})
		}
	}
	for prefix := range readmeSkipped {
		if !usedSkips[prefix] {
			t.Errorf("readmeSkipped has %q, which no block of %v starts with: remove it", prefix, readmeDocs)
		}
	}
	if ran < 5 {
		t.Errorf("only %d blocks ran: the test reads too little", ran)
	}
}

// runDocBlock runs one block of doc as shown: `watchdog` on PATH (bin),
// the host's paths pointed into the test's directories, the README's own
// blocks in the quick start's daemon's directory (srv), the others in a
// directory of their own.
func runDocBlock(t *testing.T, doc string, i int, block, srv, bin, example string, servePid int) {
	work := t.TempDir()
	alone := t.TempDir() // /var/lib/watchdog of a host with no daemon
	script := block
	// The host's paths, pointed into the test's directories: the
	// daemon's state directory is the quick start's.
	for _, r := range []struct{ from, to string }{
		{"/var/lib/watchdog/watchdog.token", filepath.Join(srv, "watchdog.token")},
		{"/run/watchdog/api.sock", filepath.Join(srv, "watchdog.sock")},
		{"/etc/watchdog/config.yaml", example},
		// systemd's reload of the unit is its ExecReload, SIGHUP.
		{"systemctl reload watchdog", fmt.Sprintf("kill -HUP %d", servePid)},
		{"/srv/runs", filepath.Join(work, "runs")},
		{"/run/agents", filepath.Join(work, "agents")},
	} {
		script = strings.ReplaceAll(script, r.from, r.to)
	}
	// Commands writing a database of their own (register, exec,
	// reap) take one where no daemon runs; the curl examples talk
	// to the quick start's daemon.
	script = strings.ReplaceAll(script, "/var/lib/watchdog/watchdog.db", filepath.Join(alone, "watchdog.db"))
	for _, dir := range []string{"runs/nightly", "runs/s-42", "agents"} {
		if err := os.MkdirAll(filepath.Join(work, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// exec's ./review.sh does what a review does: writes its review.
	writeFile(t, work, "review.sh", "#!/bin/sh\necho looks good > "+filepath.Join(work, "runs/nightly/review.md")+"\n")
	if err := os.Chmod(filepath.Join(work, "review.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A database to write or read, with an entity in it.
	if r := rmtRun(t, work, nil, "", "exec", "--db", filepath.Join(alone, "watchdog.db"), "--id", "seed", "--", "true"); r.code != 0 {
		t.Fatalf("seeding a database: %+v", r)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = work
	if doc == "README.md" {
		cmd.Dir = srv // "in a second terminal in the same directory"
	}
	cmd.Env = rmtEnv("PATH=" + bin + ":" + os.Getenv("PATH"))
	r := runCmd(t, cmd, "")
	if r.code != 0 || strings.Contains(r.stderr, "panic") {
		t.Errorf("%s block %d, run as shown in %s, exited %d:\n%s\nstdout:\n%s\nstderr:\n%s", doc, i, cmd.Dir, r.code, script, r.stdout, r.stderr)
	}
}

// skippedFor is the skip a block whose first line is first falls under and
// why it is not run; "" when it is run.
func skippedFor(first string) (prefix, why string) {
	for prefix, why := range readmeSkipped {
		if strings.HasPrefix(first, prefix) {
			return prefix, why
		}
	}
	return "", ""
}
