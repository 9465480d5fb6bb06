package monitor

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"watchdog/pidwatch"
	"watchdog/probe"
	"watchdog/proctree"
)

// A root whose parent never reaps it (here: the test, until it ends) has
// its exit status recorded from the connector's exit event at its exit,
// once; the pidfd's status that may follow is not recorded again; the
// root is kept in the tree past its death and forgotten on drop.
func TestTreeExitRecordedOnceForAnUnreapedRoot(t *testing.T) {
	tree, err := proctree.New(proctree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if tree.Mode() != proctree.ModeEvents {
		t.Skipf("the process connector is not available here: %v", tree.Why())
	}
	cmd := exec.Command("sh", "-c", "read x; exit 3")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	_, ticks, err := probe.NewHost().StartOf(pid)
	if err != nil {
		t.Fatal(err)
	}

	h := newHarness(t, DefaultSettings)
	h.m.opt.Tree = tree
	e := session("s", pid)
	e.PIDStartTicks = ticks
	h.update(e)
	h.step()
	if tree.Len() != 1 {
		t.Fatalf("the root watched by pidfd is not kept in the tree (%d roots)", tree.Len())
	}

	in.Close() // sh exits 3 and stays a zombie: the test does not reap it
	var x proctree.Exit
	select {
	case x = <-tree.Exits():
	case <-time.After(30 * time.Second):
		t.Fatal("no exit from the connector within 30s")
	}
	h.m.treeExit(context.Background(), x)
	calls := h.rec.take()
	if len(calls) < 2 || calls[0].what != "exit" || calls[0].exit.Code != 3 || calls[0].exit.Signal != 0 || calls[1].what != "check" {
		t.Fatalf("calls %v (%+v): want the exit status 3 recorded, then a check", whats(calls), calls)
	}
	if calls[1].e.Exit == nil || calls[1].e.Exit.Code != 3 {
		t.Errorf("the check did not see the exit status: %+v", calls[1].e.Exit)
	}

	// The pidfd's own status, once the root is reaped, says the same.
	calls = h.death(pidwatch.Death{Key: Key("session", "s"), PID: pid, At: x.At, Exit: pidwatch.Exit{Known: true, Code: 3}})
	for _, c := range calls {
		if c.what == "exit" {
			t.Errorf("the exit was recorded twice: %v", whats(calls))
		}
	}
	if tree.Len() != 1 {
		t.Errorf("the dead root was forgotten before its entity was dropped (%d roots)", tree.Len())
	}
	h.m.Forget("session", "s")
	h.step()
	if tree.Len() != 0 {
		t.Errorf("the dropped entity's root is still kept (%d roots)", tree.Len())
	}
}
