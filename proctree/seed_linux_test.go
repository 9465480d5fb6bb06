//go:build linux

package proctree

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"watchdog/internal/testenv"
)

// The seed by children lists finds what one walk's ppid chains find:
// children and grandchildren, the root included with its start.
func TestSeedMatchesAWalk(t *testing.T) {
	sh := startScript(t, `sleep 300 & sh -c 'sleep 300 & sleep 300 & echo $$; wait' & read _`)
	sh.pid(t) // the middle shell has started its two sleeps' parent
	root := sh.root
	var got, want map[int]uint64
	testenv.Eventually(t, "the seed and the walk agree on four descendants", ceiling, func() (bool, string) {
		var err error
		if got, err = seed("/proc", root.PID); err != nil {
			return false, err.Error()
		}
		snap, err := walk("/proc")
		if err != nil {
			return false, err.Error()
		}
		want = snap.under(root.PID, map[int]uint64{root.PID: snap.procs[root.PID].startTicks})
		return len(got) == 5 && maps.Equal(got, want), fmt.Sprint(got, want)
	})
	if got[root.PID] != root.StartTicks {
		t.Errorf("the root's start %d, want %d", got[root.PID], root.StartTicks)
	}
}

// A kernel without children lists (a fixture /proc) is seeded by a walk.
func TestSeedWithoutChildrenListsWalks(t *testing.T) {
	dir := t.TempDir()
	stat := func(pid, ppid int, comm string) {
		d := filepath.Join(dir, fmt.Sprint(pid))
		if err := os.MkdirAll(filepath.Join(d, "task", fmt.Sprint(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%d (%s) S %d 0 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, comm, ppid, 1000+pid)
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat(10, 1, "sh")
	stat(11, 10, "sleep")
	stat(12, 11, "sleep")
	stat(13, 1, "other")
	if _, err := seed(dir, 10); err == nil {
		t.Fatal("seed without children lists succeeded")
	}
	tr, err := New(Options{Walk: true, ProcDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	root := Root{PID: 10, StartTicks: 1010}
	if err := tr.Watch(root); err != nil {
		t.Fatal(err)
	}
	ps, err := tr.Descendants(root)
	if err != nil || !slices.Equal(pids(ps), []int{11, 12}) {
		t.Errorf("descendants %v (%v), want 11 and 12", ps, err)
	}
}
