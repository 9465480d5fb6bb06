//go:build linux

package pidwatch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/internal/testenv"
)

// wait is the generous ceiling for what the kernel does on its own time:
// a death reported, an exit status appearing (never a speed assertion);
// a loaded machine only makes it slower.
const wait = 2 * time.Minute

func same() bool { return true }

func newWatcher(t testing.TB) *Watcher {
	t.Helper()
	w, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// next is the next Death, failing the test when none comes in time.
func next(t testing.TB, w *Watcher) Death {
	t.Helper()
	select {
	case d := <-w.Deaths():
		return d
	case <-time.After(wait):
		t.Fatalf("no death within %s; last seen: %d keys holding a pidfd, %d deaths dropped", wait, w.Len(), w.Overflows())
		return Death{}
	}
}

// known reads deaths until key's has a known exit: the first when the
// kernel had it at once, else the second. A death for another key, or a
// second unknown one, fails the test.
func known(t testing.TB, w *Watcher, key string, pid int) Death {
	t.Helper()
	for i := 0; i < 2; i++ {
		d := next(t, w)
		if d.Key != key || d.PID != pid {
			t.Fatalf("death for %q pid %d, want %q pid %d", d.Key, d.PID, key, pid)
		}
		if d.Exit.Known {
			return d
		}
	}
	t.Fatalf("two deaths for %q without a known exit", key)
	return Death{}
}

// needExitInfo skips the test when the kernel does not keep a reaped
// process's exit status for its pidfd (PIDFD_INFO_EXIT, Linux ≥ 6.15).
func needExitInfo(t testing.TB) {
	t.Helper()
	if !ExitStatusSupported() {
		t.Skip("this kernel does not report a reaped process's exit status (PIDFD_INFO_EXIT, Linux ≥ 6.15)")
	}
}

var subreaperOnce sync.Once

// subreaper makes the test process the reaper of its orphaned descendants.
// PID 1 in a container or VM may reap late or never (in the sandbox this
// was written in, it reaps orphans about every 2 s), and the kernel keeps
// the exit status only once the process is reaped; as a subreaper, the test
// reaps them itself, at once, with Wait4, playing init's part.
func subreaper(t testing.TB) {
	t.Helper()
	var err error
	subreaperOnce.Do(func() { err = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
	if err != nil {
		t.Fatalf("prctl PR_SET_CHILD_SUBREAPER: %v", err)
	}
}

// orphan runs script in the background of a shell that exits at once, so
// the test is not its parent: it is reparented to the test as subreaper.
// Its pid is returned; the test kills and reaps it at the end if need be.
func orphan(t testing.TB, script string) int {
	t.Helper()
	out, err := exec.Command("sh", "-c", script+" >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatalf("start %q: %v", script, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("pid of %q: %q: %v", script, out, err)
	}
	t.Cleanup(func() {
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	})
	return pid
}

// ppid reads pid's parent from /proc; 0 when it is gone (reaped).
func ppid(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("list /proc/self/fd: %v", err)
	}
	return len(entries)
}

func TestDecodeExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int32
		want Exit
	}{
		{"exit 0", 0, Exit{Known: true}},
		{"exit 3", 3 << 8, Exit{Known: true, Code: 3}},
		{"exit 255", 255 << 8, Exit{Known: true, Code: 255}},
		{"SIGKILL", int32(syscall.SIGKILL), Exit{Known: true, Signal: syscall.SIGKILL}},
		{"SIGSEGV with a core dump", int32(syscall.SIGSEGV) | 0x80, Exit{Known: true, Signal: syscall.SIGSEGV}},
		// Failure cases: a stopped status is not an end.
		{"stopped", 0x7f | int32(syscall.SIGSTOP)<<8, Exit{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodeExit(tc.code); got != tc.want {
				t.Errorf("decodeExit(%#x) = %+v, want %+v", tc.code, got, tc.want)
			}
		})
	}
}

func TestKilledChild(t *testing.T) {
	needExitInfo(t)
	w := newWatcher(t)
	cmd := testenv.Sleep(t)
	pid := cmd.Process.Pid
	if err := w.Watch("child", pid, same); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if got := w.Len(); got != 1 {
		t.Errorf("Len = %d, want 1", got)
	}
	if !w.Alive("child", pid) || w.Alive("child", pid+1) || w.Alive("other", pid) {
		t.Error("Alive: want true for the watched key and pid only")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	_ = cmd.Wait() // the parent reaps at once, as init would
	d := known(t, w, "child", pid)
	if w.Alive("child", pid) {
		t.Error("Alive after its death was reported")
	}
	if want := (Exit{Known: true, Signal: syscall.SIGKILL}); d.Exit != want {
		t.Errorf("Exit = %+v, want %+v", d.Exit, want)
	}
	if d.At.IsZero() {
		t.Error("At is zero")
	}
	testenv.Eventually(t, "the dead watch to be dropped", wait, func() (bool, string) {
		n := w.Len()
		return n == 0, fmt.Sprintf("Len = %d", n)
	})
}

// TestOrphanExit is the case the package exists for: processes the
// watcher's process did not start (a shell forked them and exited) end,
// and their Death names exactly how.
func TestOrphanExit(t *testing.T) {
	needExitInfo(t)
	subreaper(t)
	w := newWatcher(t)
	for _, tc := range []struct {
		name   string
		script string
		kill   bool
		want   Exit
	}{
		{"exit 0", "(sleep 0.1; exit 0)", false, Exit{Known: true, Code: 0}},
		{"exit 3", "(sleep 0.1; exit 3)", false, Exit{Known: true, Code: 3}},
		{"SIGKILL", "sleep 300", true, Exit{Known: true, Signal: syscall.SIGKILL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid := orphan(t, tc.script)
			if err := w.Watch(tc.name, pid, same); err != nil {
				t.Fatalf("Watch: %v", err)
			}
			// The shell has exited, so the test has inherited the process
			// (unless it already was reaped, which only the test can do).
			if got := ppid(t, pid); got != os.Getpid() {
				t.Fatalf("pid %d's parent is %d, want the test (%d) as subreaper", pid, got, os.Getpid())
			}
			if tc.kill {
				if err := unix.Kill(pid, unix.SIGKILL); err != nil {
					t.Fatalf("kill: %v", err)
				}
			}
			var ws unix.WaitStatus
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
				t.Fatalf("reap pid %d: %v", pid, err)
			}
			d := known(t, w, tc.name, pid)
			if d.Exit != tc.want {
				t.Errorf("Exit = %+v, want %+v", d.Exit, tc.want)
			}
			// The pidfd and wait4 read the same status from the kernel.
			if got := decodeExit(int32(ws)); got != d.Exit {
				t.Errorf("wait4 says %+v, the pidfd %+v", got, d.Exit)
			}
		})
	}
}

// TestNoDeathLostToTheReap races the parent's reap against the watcher's
// first read of the exit status, many times: the kernel answers a read
// that lands inside the reap with ESRCH, and each of these deaths must
// still come with its status (it came without one, and the watch ended,
// in about one TestOrphanExit run of 15).
func TestNoDeathLostToTheReap(t *testing.T) {
	needExitInfo(t)
	w := newWatcher(t)
	const children = 200
	for i := range children {
		cmd := exec.Command("sh", "-c", "exit 7")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child %d: %v", i, err)
		}
		key := fmt.Sprintf("child %d", i)
		if err := w.Watch(key, cmd.Process.Pid, same); err != nil {
			t.Fatalf("Watch child %d: %v", i, err)
		}
		// Wait returns the moment the child ends and reaps it then,
		// while the watcher reads the status of the same death.
		_ = cmd.Wait()
		d := known(t, w, key, cmd.Process.Pid)
		if want := (Exit{Known: true, Code: 7}); d.Exit != want {
			t.Fatalf("child %d: Exit = %+v, want %+v", i, d.Exit, want)
		}
	}
	testenv.Eventually(t, "every watch to be dropped", wait, func() (bool, string) {
		n := w.Len()
		return n == 0, fmt.Sprintf("Len = %d", n)
	})
}

func TestWatchErrors(t *testing.T) {
	w := newWatcher(t)
	live := testenv.Sleep(t).Process.Pid
	zombie := testenv.Zombie(t)
	dead := testenv.DeadPID(t)
	for _, tc := range []struct {
		name string
		pid  int
		same func() bool
		want error // nil: an error that is none of the package's
	}{
		{"same says no: pid reused", live, func() bool { return false }, ErrNotSame},
		{"same says no, process dead", zombie, func() bool { return false }, ErrGone},
		{"no such process", dead, same, ErrGone},
		// Bad input.
		{"pid 0", 0, same, nil},
		{"negative pid", -1, same, nil},
		{"no identity check", live, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := openFDs(t)
			err := w.Watch("k", tc.pid, tc.same)
			if err == nil {
				t.Fatal("Watch succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Watch: %v, want %v", err, tc.want)
			}
			for _, sentinel := range []error{ErrNotSame, ErrGone, ErrNoFD, ErrClosed, ErrUnsupported} {
				if sentinel != tc.want && errors.Is(err, sentinel) {
					t.Errorf("Watch: %v is also %v", err, sentinel)
				}
			}
			if after := openFDs(t); after != before {
				t.Errorf("open fds %d before, %d after: a pidfd was left open", before, after)
			}
			if n := w.Len(); n != 0 {
				t.Errorf("Len = %d after a failed Watch", n)
			}
		})
	}
}

func TestWatchAfterClose(t *testing.T) {
	w, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	pid := testenv.Sleep(t).Process.Pid // its os.Process holds a pidfd of its own
	before := openFDs(t)
	if err := w.Watch("k", pid, same); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch after Close: %v, want ErrClosed", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open fds %d before, %d after", before, after)
	}
}

// killed kills and reaps cmd, a child of the test.
func killed(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	_ = cmd.Wait()
}

// TestForget proves absences with a sentinel: after the forgotten process
// dies, another watched one dies, and its Death must be the first to come.
func TestForget(t *testing.T) {
	t.Run("before the death", func(t *testing.T) {
		w := newWatcher(t)
		gone, sentinel := testenv.Sleep(t), testenv.Sleep(t)
		if err := w.Watch("gone", gone.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		w.Forget("gone")
		w.Forget("never watched")
		if n := w.Len(); n != 0 {
			t.Errorf("Len = %d after Forget", n)
		}
		killed(t, gone)
		if err := w.Watch("sentinel", sentinel.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		killed(t, sentinel)
		if d := next(t, w); d.Key != "sentinel" {
			t.Errorf("first death is %q's, want the sentinel's", d.Key)
		}
	})
	t.Run("after the death, before it was read", func(t *testing.T) {
		w := newWatcher(t)
		gone, sentinel := testenv.Sleep(t), testenv.Sleep(t)
		if err := w.Watch("gone", gone.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		killed(t, gone)
		// The watch is dropped once its exit is known or ExitWait passed:
		// its deaths are queued or offered, and nobody has read them.
		testenv.Eventually(t, "the dead watch to be dropped", wait, func() (bool, string) {
			n := w.Len()
			return n == 0, fmt.Sprintf("Len = %d", n)
		})
		w.Forget("gone")
		if err := w.Watch("sentinel", sentinel.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		killed(t, sentinel)
		if d := next(t, w); d.Key != "sentinel" {
			t.Errorf("first death is %q's, want the sentinel's", d.Key)
		}
	})
	t.Run("after the death, queued behind another", func(t *testing.T) {
		w := newWatcher(t)
		kept, gone, sentinel := testenv.Sleep(t), testenv.Sleep(t), testenv.Sleep(t)
		for key, cmd := range map[string]*exec.Cmd{"kept": kept, "gone": gone} {
			if err := w.Watch(key, cmd.Process.Pid, same); err != nil {
				t.Fatalf("Watch %s: %v", key, err)
			}
		}
		// One after the other, so that kept's deaths are offered first and
		// gone's wait in the queue behind them.
		killed(t, kept)
		testenv.Eventually(t, "kept's watch to be dropped", wait, func() (bool, string) {
			n := w.Len()
			return n == 1, fmt.Sprintf("Len = %d", n)
		})
		killed(t, gone)
		testenv.Eventually(t, "gone's watch to be dropped", wait, func() (bool, string) {
			n := w.Len()
			return n == 0, fmt.Sprintf("Len = %d", n)
		})
		w.Forget("gone")
		if err := w.Watch("sentinel", sentinel.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		killed(t, sentinel)
		seen := map[string]bool{}
		for !seen["sentinel"] {
			seen[next(t, w).Key] = true
		}
		if seen["gone"] {
			t.Error("a death of the forgotten key came after Forget")
		}
		if !seen["kept"] {
			t.Error("kept's death never came")
		}
	})
	t.Run("a key watched again", func(t *testing.T) {
		w := newWatcher(t)
		old, replacement := testenv.Sleep(t), testenv.Sleep(t)
		if err := w.Watch("k", old.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		if err := w.Watch("k", replacement.Process.Pid, same); err != nil {
			t.Fatalf("Watch again: %v", err)
		}
		if n := w.Len(); n != 1 {
			t.Errorf("Len = %d, want 1", n)
		}
		killed(t, old)
		killed(t, replacement)
		if d := next(t, w); d.PID != replacement.Process.Pid {
			t.Errorf("first death is pid %d's, want the replacement's %d", d.PID, replacement.Process.Pid)
		}
	})
}

func TestZombie(t *testing.T) {
	w := newWatcher(t)
	pid := testenv.Zombie(t)
	if err := w.Watch("zombie", pid, same); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	d := next(t, w)
	if d.Key != "zombie" || d.PID != pid {
		t.Errorf("death for %q pid %d, want zombie pid %d", d.Key, d.PID, pid)
	}
	// Unreaped, the zombie's status is not the kernel's to give yet.
	t.Logf("zombie's first death: %+v", d.Exit)
}

func TestCloseClosesEveryFD(t *testing.T) {
	var pids []int
	for range 8 {
		pids = append(pids, testenv.Sleep(t).Process.Pid)
	}
	// Counted after the sleeps start: each os.Process holds a pidfd too.
	before := openFDs(t)
	w, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	const watched = 1000
	for i := range watched {
		if err := w.Watch(strconv.Itoa(i), pids[i%len(pids)], same); err != nil {
			t.Fatalf("Watch %d: %v", i, err)
		}
	}
	if n := w.Len(); n != watched {
		t.Errorf("Len = %d, want %d", n, watched)
	}
	if got := openFDs(t); got < before+watched {
		t.Errorf("open fds %d with %d watched, from %d", got, watched, before)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open fds %d before New, %d after Close", before, after)
	}
	if n := w.Len(); n != 0 {
		t.Errorf("Len = %d after Close", n)
	}
}

// TestSlowReader: deaths pile up while nobody reads, and neither the
// epoll loop nor new watches wait for the reader.
func TestSlowReader(t *testing.T) {
	w := newWatcher(t)
	const n = 20
	want := map[string]bool{}
	for i := range n {
		cmd := testenv.Sleep(t)
		key := strconv.Itoa(i)
		if err := w.Watch(key, cmd.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		killed(t, cmd)
		want[key] = true
	}
	// Every death was seen and every watch dropped, with no reader yet.
	testenv.Eventually(t, "every dead watch to be dropped", wait, func() (bool, string) {
		n := w.Len()
		return n == 0, fmt.Sprintf("Len = %d", n)
	})
	late := testenv.Sleep(t)
	if err := w.Watch("late", late.Process.Pid, same); err != nil {
		t.Fatalf("Watch with deaths unread: %v", err)
	}
	for len(want) > 0 {
		d := next(t, w)
		delete(want, d.Key)
	}
}

// TestQueueOverflow: with nobody reading, deaths beyond the queue's bound
// are dropped, counted and announced on Resync (one token for many drops,
// another for a drop after it was taken); what was queued is delivered,
// and once read the queue takes deaths again.
func TestQueueOverflow(t *testing.T) {
	w := newWatcher(t)
	w.SetQueueMaxForTest(2)
	const n = 8
	keys := map[string]bool{}
	for i := range n {
		cmd := testenv.Sleep(t)
		key := strconv.Itoa(i)
		if err := w.Watch(key, cmd.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		killed(t, cmd)
		keys[key] = true
	}
	// Every watch over (every Death made, queued or dropped): nothing
	// more can come for these keys.
	testenv.Eventually(t, "every dead watch to be dropped", wait, func() (bool, string) {
		n := w.Len()
		return n == 0, fmt.Sprintf("Len = %d, overflows %d", n, w.Overflows())
	})
	pending := w.pendingForTest()
	// At most the bound queued and one offered: of n first deaths at
	// least n-3 were dropped.
	if pending > 3 || w.Overflows() < n-3 {
		t.Fatalf("%d deaths pending, %d dropped; want at most 3 pending and at least %d dropped", pending, w.Overflows(), n-3)
	}
	if got := len(w.Resync()); got != 1 {
		t.Fatalf("%d resync tokens after %d drops, want 1", got, w.Overflows())
	}
	<-w.Resync()
	for range pending {
		if d := next(t, w); !keys[d.Key] {
			t.Errorf("death for %q, not a watched key", d.Key)
		}
	}
	// Read out: the queue has room, and a sentinel's death is the next.
	dropped := w.Overflows()
	sentinel := testenv.Sleep(t)
	if err := w.Watch("sentinel", sentinel.Process.Pid, same); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	killed(t, sentinel)
	if d := next(t, w); d.Key != "sentinel" {
		t.Errorf("after the queue was read: death for %q, want the sentinel's", d.Key)
	}
	if w.Overflows() != dropped || len(w.Resync()) != 0 {
		t.Errorf("a death with room was dropped: overflows %d (was %d), %d resync tokens", w.Overflows(), dropped, len(w.Resync()))
	}
	// Full again, with the first token taken: a new drop sends another.
	testenv.Eventually(t, "the sentinel's watch to be dropped", wait, func() (bool, string) {
		return w.Len() == 0, fmt.Sprintf("Len = %d", w.Len())
	})
	for len(w.Resync()) == 0 {
		cmd := testenv.Sleep(t)
		if err := w.Watch("more", cmd.Process.Pid, same); err != nil {
			t.Fatalf("Watch: %v", err)
		}
		killed(t, cmd)
		testenv.Eventually(t, "the watch to be dropped", wait, func() (bool, string) {
			return w.Len() == 0, fmt.Sprintf("Len = %d", w.Len())
		})
	}
	if w.Overflows() <= dropped {
		t.Errorf("a resync token with no new drop: overflows %d", w.Overflows())
	}
}

// TestNoFD runs out of descriptors for real: with the soft limit at 3 and
// fds 0-2 open, no new fd can be had.
func TestNoFD(t *testing.T) {
	w := newWatcher(t)
	pid := testenv.Sleep(t).Process.Pid
	for fd := range 3 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			t.Skipf("fd %d is not open, so a limit of 3 would not exhaust: %v", fd, err)
		}
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	low := old
	low.Cur = 3
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	err := w.Watch("k", pid, same)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); rerr != nil {
		t.Fatalf("restore the fd limit: %v", rerr)
	}
	if !errors.Is(err, ErrNoFD) {
		t.Errorf("Watch out of fds: %v, want ErrNoFD", err)
	}
	if n := w.Len(); n != 0 {
		t.Errorf("Len = %d", n)
	}
	// With fds again, the same process can be watched.
	if err := w.Watch("k", pid, same); err != nil {
		t.Errorf("Watch with the limit restored: %v", err)
	}
}

// TestConcurrentUse: Watch, Forget and deaths on shared keys from several
// goroutines (run with -race), then Close gives back every fd.
func TestConcurrentUse(t *testing.T) {
	var cmds []*exec.Cmd
	for range 4 {
		cmds = append(cmds, testenv.Sleep(t))
	}
	before := openFDs(t)
	w, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	stopReading := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case <-w.Deaths():
			case <-stopReading:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				key := strconv.Itoa((g + i) % 5)
				err := w.Watch(key, cmds[(g+i)%len(cmds)].Process.Pid, same)
				if err != nil && !errors.Is(err, ErrGone) {
					t.Errorf("Watch: %v", err)
				}
				if i%3 == 0 {
					w.Forget(key)
				}
			}
		})
	}
	// Killed, not reaped: Wait would close the os.Process's own pidfd
	// and upset the count. Zombies die just as well.
	for _, cmd := range cmds[:2] {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill: %v", err)
		}
	}
	wg.Wait()
	close(stopReading)
	<-read
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open fds %d before New, %d after Close", before, after)
	}
}

// TestBudget: with a cap of two, a third Watch is refused with ErrBudget
// (which is ErrNoFD to a caller that polls on it) before any fd is opened;
// re-watching a held key is allowed at the cap; a death frees its slot
// once its fd is closed.
func TestBudget(t *testing.T) {
	w := newWatcher(t)
	w.SetMax(2)
	if got := w.Max(); got != 2 {
		t.Fatalf("Max = %d, want 2", got)
	}
	a, b, c := testenv.Sleep(t), testenv.Sleep(t), testenv.Sleep(t)
	for key, cmd := range map[string]*exec.Cmd{"a": a, "b": b} {
		if err := w.Watch(key, cmd.Process.Pid, same); err != nil {
			t.Fatalf("Watch %s under the cap: %v", key, err)
		}
	}
	before := openFDs(t)
	err := w.Watch("c", c.Process.Pid, same)
	if !errors.Is(err, ErrBudget) || !errors.Is(err, ErrNoFD) {
		t.Fatalf("Watch over the cap: %v, want ErrBudget and ErrNoFD", err)
	}
	if after := openFDs(t); after != before {
		t.Errorf("open fds %d before, %d after a refused Watch", before, after)
	}
	if err := w.Watch("a", a.Process.Pid, same); err != nil {
		t.Errorf("re-watch of a held key at the cap: %v", err)
	}
	if n := w.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}

	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	if d := next(t, w); d.Key != "a" {
		t.Fatalf("death of %q, want a", d.Key)
	}
	// The slot is free once the dead watch's fd is closed: at once when
	// the exit status came with the death, else within ExitWait.
	testenv.Eventually(t, "a's slot freed", wait, func() (bool, string) {
		err := w.Watch("c", c.Process.Pid, same)
		return err == nil, fmt.Sprint(err)
	})

	// No cap again: anything goes.
	w.SetMax(0)
	if err := w.Watch("a2", b.Process.Pid, same); err != nil {
		t.Errorf("Watch with no cap: %v", err)
	}
}

// TestBudgetConcurrent: Watch calls racing for the last slots never hold
// more pidfds than the cap between them, not even while they open.
func TestBudgetConcurrent(t *testing.T) {
	w := newWatcher(t)
	const limit = 3
	w.SetMax(limit)
	pid := testenv.Sleep(t).Process.Pid
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, refused int
	for i := range 16 {
		wg.Go(func() {
			err := w.Watch(fmt.Sprintf("k%d", i), pid, func() bool {
				if n := w.Len(); n >= limit {
					t.Errorf("Len = %d while another Watch opens: over the cap", n)
				}
				return true
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrBudget):
				refused++
			default:
				t.Errorf("Watch: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != limit || refused != 16-limit || w.Len() != limit {
		t.Errorf("%d watched, %d refused, Len %d; want %d, %d, %d", ok, refused, w.Len(), limit, 16-limit, limit)
	}
}
