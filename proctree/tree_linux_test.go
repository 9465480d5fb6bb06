//go:build linux

package proctree

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/internal/testenv"
)

// ceiling is how long a test waits for what the kernel and the reader do:
// generous, for a loaded machine; the waits end as soon as the condition
// holds.
const ceiling = 30 * time.Second

// eventsTree is a Tree in events mode, or the test is skipped: the
// connector needs CAP_NET_ADMIN in the initial namespaces.
func eventsTree(t *testing.T, opt Options) *Tree {
	t.Helper()
	tr, err := New(opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	if tr.Mode() != ModeEvents {
		t.Skipf("process connector unavailable here: %v", tr.Why())
	}
	return tr
}

func walkTree(t *testing.T) *Tree {
	t.Helper()
	tr, err := New(Options{Walk: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	if tr.Mode() != ModeWalk {
		t.Fatalf("mode %s, forced walk", tr.Mode())
	}
	return tr
}

// script is a real shell running one script, in its own process group so
// that everything it starts (background jobs, orphans) is killed at the
// end; lines are written to its stdin and read from its stdout.
type script struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	root Root
}

func startScript(t *testing.T, src string) *script {
	t.Helper()
	cmd := exec.Command("sh", "-c", src)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sh: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return &script{cmd: cmd, in: in, out: bufio.NewReader(out), root: rootOf(t, pid)}
}

// go sends one line, which a `read _` in the script waits for.
func (s *script) go_(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(s.in, "go\n"); err != nil {
		t.Fatalf("write to the script: %v", err)
	}
}

// pid reads one pid the script echoed.
func (s *script) pid(t *testing.T) int {
	t.Helper()
	line, err := s.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read the script's output: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the script printed %q, not a pid", line)
	}
	return pid
}

func rootOf(t *testing.T, pid int) Root {
	t.Helper()
	s, _, err := readStat("/proc", pid, make([]byte, 0, 1024))
	if err != nil {
		t.Fatalf("read pid %d: %v", pid, err)
	}
	return Root{PID: pid, StartTicks: s.startTicks}
}

func pids(ps []Proc) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}

// waitDescendants waits until root's descendants are want (pids, sorted).
func waitDescendants(t *testing.T, tr *Tree, root Root, want []int) []Proc {
	t.Helper()
	var got []Proc
	testenv.Eventually(t, fmt.Sprintf("descendants %v", want), ceiling, func() (bool, string) {
		var err error
		got, err = tr.Descendants(root)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(pids(got), want), fmt.Sprint(got)
	})
	return got
}

// nextExit waits for the next exit the tree reports for pid.
func nextExit(t *testing.T, tr *Tree, pid int) Exit {
	t.Helper()
	deadline := time.After(ceiling)
	for {
		select {
		case x := <-tr.Exits():
			if x.PID == pid {
				return x
			}
		case <-deadline:
			t.Fatalf("no exit of pid %d within %s", pid, ceiling)
		}
	}
}

// A shell that starts sleep in the background and exits: its exit code
// comes from the connector, and the sleep, now an orphan (a child of init
// or of a subreaper), is still its descendant.
func TestBackgroundChildOutlivesShell(t *testing.T) {
	tr := eventsTree(t, Options{})
	sh := startScript(t, `read _; sleep 300 & echo $!; exit 3`)
	if err := tr.Watch(sh.root); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if got, _ := tr.Descendants(sh.root); len(got) != 0 {
		t.Fatalf("descendants before the fork: %v", got)
	}
	sh.go_(t)
	sleep := sh.pid(t)
	x := nextExit(t, tr, sh.root.PID)
	if x.Code != 3 || x.Signal != 0 || x.Root != sh.root {
		t.Fatalf("exit %+v, want code 3 of root %v", x, sh.root)
	}
	waitDescendants(t, tr, sh.root, []int{sleep})
	// The name is read when asked: sh until the child has exec'd sleep.
	testenv.Eventually(t, "the orphaned sleep", ceiling, func() (bool, string) {
		got, err := tr.Descendants(sh.root)
		return err == nil && len(got) == 1 && got[0].Comm == "sleep" && got[0].PPID != sh.root.PID, fmt.Sprint(got, err)
	})
}

// A double-forked daemon under a registered pid: the middle shell exits at
// once, its sleep is reparented away from the root, and the ppid chains
// no longer lead to it; the events kept it.
func TestDoubleForkedDaemon(t *testing.T) {
	tr := eventsTree(t, Options{})
	sh := startScript(t, `read _; sh -c 'sleep 300 & echo $!'; read _`)
	if err := tr.Watch(sh.root); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	sh.go_(t)
	daemon := sh.pid(t)
	got := waitDescendants(t, tr, sh.root, []int{daemon})
	if got[0].PPID == sh.root.PID {
		t.Fatalf("the daemon's parent is the root: not double-forked")
	}
	snap, err := walk("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if byWalk := snap.under(sh.root.PID, map[int]uint64{}); len(byWalk) != 0 {
		t.Fatalf("a /proc walk finds %v under the root: the test shows nothing", byWalk)
	}
}

// A child whose parent never reaps it exits with code 7: the code arrives
// from the connector while the child is a zombie, which the pidfd's
// PIDFD_INFO_EXIT cannot give until it is reaped. The delay from the exit
// to the delivery is logged as a figure, not asserted.
func TestZombieExitCode(t *testing.T) {
	tr := eventsTree(t, Options{})
	// The subshell reads the test's line on fd 3, the shell's stdin (a
	// background job's own stdin is /dev/null); the parent then becomes
	// sleep, which never waits.
	sh := startScript(t, `exec 3<&0; (read _ <&3; exit 7) & echo $!; exec sleep 300`)
	child := rootOf(t, sh.pid(t))
	if err := tr.Watch(child); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	// Only once the parent is sleep may the child exit: a shell still
	// running would reap its background job, and there would be no zombie.
	parent := sh.root.PID
	testenv.Eventually(t, "the parent to become sleep", ceiling, func() (bool, string) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", parent))
		return err == nil && strings.TrimSpace(string(comm)) == "sleep", fmt.Sprintf("%q %v", comm, err)
	})
	sh.go_(t)
	x := nextExit(t, tr, child.PID)
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		t.Fatal(err)
	}
	if x.Code != 7 || x.Signal != 0 {
		t.Fatalf("exit %+v, want code 7", x)
	}
	s, _, err := readStat("/proc", child.PID, make([]byte, 0, 1024))
	if err != nil || s.state != 'Z' {
		t.Fatalf("the child is not a zombie after its exit was reported: %+v, %v", s, err)
	}
	delay := time.Duration(now.Nano()) - x.Stamp
	t.Logf("figure: zombie's exit code delivered %s after its exit (kernel stamp to receipt)", delay)
}

// The reduced mode, forced, finds the same descendants as the events:
// children and grandchildren by ppid chains, and, once a walk has seen
// them, grandchildren orphaned by a middle process's death.
func TestWalkModeFindsTheSame(t *testing.T) {
	ev := eventsTree(t, Options{})
	wk := walkTree(t)
	sh := startScript(t, `read _; sleep 300 & sh -c 'sleep 300 & sleep 300 & echo $$; wait' & read _`)
	if err := ev.Watch(sh.root); err != nil {
		t.Fatalf("Watch (events): %v", err)
	}
	if err := wk.Watch(sh.root); err != nil {
		t.Fatalf("Watch (walk): %v", err)
	}
	sh.go_(t)
	middle := sh.pid(t)
	var want []int
	testenv.Eventually(t, "the root's four descendants", ceiling, func() (bool, string) {
		got, err := ev.Descendants(sh.root)
		want = pids(got)
		return err == nil && len(got) == 4, fmt.Sprint(got, err)
	})
	if err := wk.Refresh(); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	got, err := wk.Descendants(sh.root)
	if err != nil || !slices.Equal(pids(got), want) {
		t.Fatalf("walk mode: %v (%v), events mode: %v", got, err, want)
	}

	// The middle shell dies: its two sleeps are orphans now.
	if err := syscall.Kill(middle, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(p int) bool { return p == middle })
	waitDescendants(t, ev, sh.root, want)
	if err := wk.Refresh(); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	got, err = wk.Descendants(sh.root)
	if err != nil || !slices.Equal(pids(got), want) {
		t.Fatalf("walk mode after the orphaning: %v (%v), events mode: %v", got, err, want)
	}
}

// Watch checks the root's identity: a start time that is not the
// process's is another process, a pid that is gone is gone.
func TestWatchIdentity(t *testing.T) {
	for _, opt := range []Options{{}, {Walk: true}} {
		tr, err := New(opt)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		sleep := testenv.Sleep(t)
		root := rootOf(t, sleep.Process.Pid)
		if err := tr.Watch(Root{PID: root.PID, StartTicks: root.StartTicks + 1}); !errors.Is(err, ErrNotSame) {
			t.Errorf("%s: Watch with another start time: %v, want ErrNotSame", tr.Mode(), err)
		}
		if err := tr.Watch(Root{PID: testenv.DeadPID(t)}); !errors.Is(err, ErrGone) {
			t.Errorf("%s: Watch of a dead pid: %v, want ErrGone", tr.Mode(), err)
		}
		if err := tr.Watch(Root{PID: testenv.Zombie(t)}); !errors.Is(err, ErrGone) {
			t.Errorf("%s: Watch of a zombie: %v, want ErrGone", tr.Mode(), err)
		}
		if err := tr.Watch(root); err != nil {
			t.Errorf("%s: Watch: %v", tr.Mode(), err)
		}
		tr.Forget(root)
		if _, err := tr.Descendants(root); !errors.Is(err, ErrNotWatched) {
			t.Errorf("%s: Descendants after Forget: %v, want ErrNotWatched", tr.Mode(), err)
		}
	}
}
