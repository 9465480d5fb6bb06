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
	x.At = h.clock.Now() // the harness's clock, which the deadlines read
	h.m.treeExit(context.Background(), x)
	calls := h.rec.take()
	if len(calls) != 1 || calls[0].what != "check" || !calls[0].ev.Died || calls[0].ev.Exit == nil || calls[0].ev.Exit.Code != 3 || calls[0].ev.Exit.Signal != 0 {
		t.Fatalf("calls %v (%+v): want one check told the death and its exit status 3", whats(calls), calls)
	}

	// The pidfd's own news of the same death, and its status once the
	// root is reaped, say the same: nothing more is done.
	for _, x := range []pidwatch.Exit{{}, {Known: true, Code: 3}} {
		if calls = h.death(pidwatch.Death{Key: Key("session", "s"), PID: pid, At: h.clock.Now(), Exit: x}); len(calls) != 0 {
			t.Errorf("the same death told again acted: %v", whats(calls))
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
