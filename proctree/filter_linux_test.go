//go:build linux

package proctree

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"watchdog/internal/testenv"
)

// filteredTree is a Tree in events mode with the kernel-side filter, or
// the test is skipped (no connector, or no eBPF here).
func filteredTree(t *testing.T) *Tree {
	t.Helper()
	tr := eventsTree(t, Options{})
	if err := tr.Filter(); err != nil {
		t.Skipf("no kernel-side filter here: %v", err)
	}
	return tr
}

// closeOpenFlag waits until the filter's open flag, set by a Watch, is
// off again: the reader takes it off at its second drain, so short-lived
// processes are started until then to give it something to read.
func closeOpenFlag(t *testing.T, tr *Tree) {
	t.Helper()
	testenv.Eventually(t, "the filter's open flag off", ceiling, func() (bool, string) {
		tr.mu.Lock()
		opened := tr.opened
		tr.mu.Unlock()
		if opened {
			_ = exec.Command("true").Run()
		}
		return !opened, fmt.Sprintf("opened, %d events read", tr.events.Load())
	})
}

// The filter lets through nothing of processes in no tree: a few hundred
// unwatched processes come and go, then a watched sentinel exits; its
// exit is the one event read, and those before it (the kernel queues in
// order) never reached the Tree.
func TestFilterDropsTheUnwatched(t *testing.T) {
	tr := filteredTree(t)
	sentinel := testenv.Sleep(t)
	if err := tr.Watch(rootOf(t, sentinel.Process.Pid)); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	closeOpenFlag(t, tr)
	before := tr.events.Load()
	for range 300 {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	if err := sentinel.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	x := nextExit(t, tr, sentinel.Process.Pid)
	if x.Signal != syscall.SIGKILL {
		t.Fatalf("sentinel's exit %+v, want SIGKILL", x)
	}
	if n := tr.events.Load() - before; n != 1 {
		t.Fatalf("%d events read for 300 unwatched processes and the sentinel's exit, want 1", n)
	}
	if err := tr.Filter(); err != nil {
		t.Fatalf("the filter was given up: %v", err)
	}
}

// A chain of forks faster than any user-space update of a filter could
// follow: each subshell starts the next in the background and exits at
// once, twenty deep, and the last starts a sleep. Every link is reparented
// as soon as its parent exits, so neither ppid chains nor a filter that
// user space keeps find the sleep; the filter adds each child in the
// kernel, before the child runs, and the sleep is the root's descendant.
func TestFilterFollowsAFastChain(t *testing.T) {
	tr := filteredTree(t)
	sh := startScript(t, `read _; f() { if [ "$1" -gt 0 ]; then (f $(($1 - 1)) &); else sleep 300 & echo $!; fi; }; f 20; read _`)
	if err := tr.Watch(sh.root); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	closeOpenFlag(t, tr)
	sh.go_(t)
	sleep := sh.pid(t)
	got := waitDescendants(t, tr, sh.root, []int{sleep})
	if got[0].PPID == sh.root.PID {
		t.Fatalf("the sleep's parent is the root: the chain shows nothing")
	}
	if err := tr.Filter(); err != nil {
		t.Fatalf("the filter was given up: %v", err)
	}
}

// Forget takes the root's members out of the filter's map, so the root's
// later forks are dropped in the kernel (their children are not added);
// Watch puts them back, with what the root started meanwhile.
func TestFilterFollowsForget(t *testing.T) {
	tr := filteredTree(t)
	sh := startScript(t, `while read _; do sleep 300 & echo $!; done`)
	if err := tr.Watch(sh.root); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	sh.go_(t)
	first := sh.pid(t)
	waitDescendants(t, tr, sh.root, []int{first})
	if !inFilter(t, tr, sh.root.PID) || !inFilter(t, tr, first) {
		t.Fatalf("the root and its sleep are not in the filter's map")
	}
	tr.Forget(sh.root)
	sh.go_(t)
	second := sh.pid(t) // its fork event was sent (and dropped) before the echo
	for _, pid := range []int{sh.root.PID, first, second} {
		if inFilter(t, tr, pid) {
			t.Errorf("pid %d in the filter's map after Forget", pid)
		}
	}
	if err := tr.Watch(sh.root); err != nil { // the seed finds the second sleep
		t.Fatalf("Watch again: %v", err)
	}
	waitDescendants(t, tr, sh.root, slices.Sorted(slices.Values([]int{first, second})))
	for _, pid := range []int{sh.root.PID, first, second} {
		if !inFilter(t, tr, pid) {
			t.Errorf("pid %d not in the filter's map after Watch", pid)
		}
	}
}

// inFilter looks pid up in the filter's map.
func inFilter(t *testing.T, tr *Tree, pid int) bool {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.conn.filt == nil {
		t.Fatalf("the filter was given up: %v", tr.conn.filterErr)
	}
	var value uint32
	err := tr.conn.filt.m.Lookup(uint32(pid), &value)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ebpf.ErrKeyNotExist):
		return false
	}
	t.Fatalf("look pid %d up in the filter's map: %v", pid, err)
	return false
}

// A filter given up (a map that refused a pid, too many members) is
// detached: every event reaches the Tree again, which stays exact, and
// says why.
func TestFilterGivenUp(t *testing.T) {
	tr := filteredTree(t)
	sh := startScript(t, `read _; sh -c 'sleep 300 & echo $!'; read _`)
	if err := tr.Watch(sh.root); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	closeOpenFlag(t, tr)
	tr.mu.Lock()
	tr.conn.unfilter(errors.New("given up by the test"))
	tr.mu.Unlock()
	if err := tr.Filter(); err == nil {
		t.Fatal("Filter is nil after the filter was given up")
	}
	before := tr.events.Load()
	for range 20 {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	sh.go_(t)
	daemon := sh.pid(t)
	waitDescendants(t, tr, sh.root, []int{daemon})
	// The unwatched processes' 40 events came before the daemon's fork.
	if n := tr.events.Load() - before; n < 40 {
		t.Errorf("%d events read since the filter was given up, want every process's (at least 40)", n)
	}
}

// TestFilterPermissionWording: the library's EPERM blames RLIMIT_MEMLOCK,
// which this kernel no longer charges; the reason says what is missing.
func TestFilterPermissionWording(t *testing.T) {
	lib := fmt.Errorf("map create: %w (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", unix.EPERM)
	got := permission(lib)
	if !errors.Is(got, unix.EPERM) || strings.Contains(got.Error(), "MEMLOCK") || !strings.Contains(got.Error(), "CAP_BPF") {
		t.Errorf("EPERM worded %q", got)
	}
	other := errors.New("map create: invalid argument")
	if permission(other) != other {
		t.Errorf("another error changed: %v", permission(other))
	}
}
