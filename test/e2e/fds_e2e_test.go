package e2e

// The fd budget end to end (ADR-0037): the built daemon under a small fd
// limit, watching more live processes than it has descriptors.

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"watchdog/internal/testenv"
)

// fdsLimit is the daemon's RLIMIT_NOFILE in the test, soft and hard, and
// fdsProcs how many live processes it is given: more than its limit.
const (
	fdsLimit = 256
	fdsProcs = 400
)

// fdLimitOf reads the "Max open files" soft limit of pid.
func fdLimitOf(t *testing.T, pid int) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Max open files"); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no Max open files in /proc/%d/limits", pid)
	return ""
}

// TestServeUnderASmallFDLimit: with RLIMIT_NOFILE at 256 and 400 live
// processes registered over HTTP, every registration is accepted, /readyz
// stays 200, the watcher holds exactly its cap of pidfds and the rest are
// polled, and a sample of killed processes (some watched by pidfd, some
// polled) is every one seen dead; the slots the dead free go to polled
// processes. Nothing logs "too many open files".
func TestServeUnderASmallFDLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "watchdog.db")
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf(`store:
  dsn: %q
listen: 127.0.0.1:0
auth: none
log:
  level: info
  format: json
`, db))
	// dash and bash alike set the soft and the hard limit with `ulimit -n`;
	// exec keeps the pid, so the test signals the daemon itself.
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, fdsLimit), binPath, "serve", "--config", cfg)
	cmd.Env = svEnv()
	d := svLaunch(t, cmd, cfg, db)
	pid := d.cmd.Process.Pid
	if got := fdLimitOf(t, pid); got != fmt.Sprint(fdsLimit) {
		t.Fatalf("the daemon runs with an fd limit of %s, want %d", got, fdsLimit)
	}
	budget := d.logged("file descriptor budget", nil)
	if len(budget) != 1 {
		t.Fatalf("want one budget line, got %v", budget)
	}
	capacity := int(budget[0]["pidfd_cap"].(float64))
	if capacity <= 0 || capacity >= fdsProcs {
		t.Fatalf("pidfd_cap %d: want some, fewer than %d", capacity, fdsProcs)
	}

	procs := make([]*svProc, fdsProcs)
	for i := range procs {
		procs[i] = svSleep(t)
	}
	// Four clients at once, as a busy host's writers would.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: svHTTP.Timeout}
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < fdsProcs; i += 4 {
				doc := fmt.Sprintf(`{"type":"session","id":"f-%d","lifecycle":"running","pid":%d}`, i, procs[i].pid)
				resp, err := client.Post(d.base+"/api/v1/entities", "application/json", strings.NewReader(doc))
				if err == nil {
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusCreated {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("f-%d: %v %v", i, err, resp))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d registrations failed, first: %s", len(failed), fdsProcs, failed[0])
	}

	pidfdSeries, pollSeries := `watchdog_watched_processes{mode="pidfd"}`, `watchdog_watched_processes{mode="poll"}`
	watching := func(alive int) func() (bool, string) {
		return func() (bool, string) {
			pidfd, poll := d.metric(pidfdSeries), d.metric(pollSeries)
			return int(pidfd) == capacity && int(poll) == alive-capacity, fmt.Sprintf("pidfd %v, poll %v", pidfd, poll)
		}
	}
	testenv.Eventually(t, fmt.Sprintf("%d watched by pidfd (the cap), %d polled", capacity, fdsProcs-capacity), svDeadline, watching(fdsProcs))
	if code, body := d.readyz(); code != http.StatusOK {
		t.Fatalf("/readyz with the watcher at its cap: %d %s", code, body)
	}

	// A sample of each mode, by what the daemon holds pidfds of.
	held := pidfdsOf(t, pid)
	var byPidfd, byPoll []int
	for i, p := range procs {
		switch {
		case held[p.pid] && len(byPidfd) < 5:
			byPidfd = append(byPidfd, i)
		case !held[p.pid] && len(byPoll) < 5:
			byPoll = append(byPoll, i)
		}
	}
	if len(byPidfd) < 5 || len(byPoll) < 5 {
		t.Fatalf("sample: %d by pidfd, %d polled; the daemon holds pidfds of %d processes", len(byPidfd), len(byPoll), len(held))
	}
	sample := append(byPidfd, byPoll...)
	for _, i := range sample {
		procs[i].kill(t)
	}
	// Seen dead: at once by pidfd, within a poll interval when polled.
	for _, i := range sample {
		d.waitEntity("session", fmt.Sprintf("f-%d", i), "seen dead", func(e svEntity) bool {
			return e.State.Health == "process_dead" || e.lifecycle() != "running"
		})
	}
	// The freed slots went to polled processes.
	testenv.Eventually(t, "the cap filled again from the polled", svDeadline, watching(fdsProcs-len(sample)))
	if code, body := d.readyz(); code != http.StatusOK {
		t.Fatalf("/readyz after the deaths: %d %s", code, body)
	}
	if logs := d.logs.String(); strings.Contains(logs, "too many open files") {
		t.Errorf("the daemon ran out of fds:\n%s", logs)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Errorf("serve exited %d", code)
	}
}
