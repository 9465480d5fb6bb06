package reaper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
)

// storePoison writes a completed session with contract specs straight
// into the store, as an older version (before registration refused such
// contracts) would have left it: the sweep must stay bounded all the same.
func (f *fixture) storePoison(id, root string, specs []state.ArtifactSpec) {
	f.t.Helper()
	l := "completed"
	now := f.clock.Now()
	e := store.Entity{Type: "session", ID: id, Lifecycle: &l, Terminal: true, HostID: f.r.HostID,
		ArtifactsRoot: root, Artifacts: specs, StartedAt: now.Add(-60 * time.Second), EndedAt: now}
	if _, err := f.st.Register(context.Background(), e, "orchestrator", now); err != nil {
		f.t.Fatal(err)
	}
}

func specs(n int, format string) []state.ArtifactSpec {
	out := make([]state.ArtifactSpec, n)
	for i := range out {
		path := format
		if strings.Contains(format, "%") {
			path = fmt.Sprintf(format, i)
		}
		out[i] = state.ArtifactSpec{Path: path, Required: true}
	}
	return out
}

// TestPoisonContractsDoNotDelayDeath: with issue 11's poison contracts in
// the store, a session whose process is killed is still seen dead by the
// next sweep, which stays well inside its budget, and is ended by
// enforce_terminal after the grace. The poisoned entities read delivery
// unknown with the bound named.
func TestPoisonContractsDoNotDelayDeath(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir() // issue 11's root: two self-links, and a directory of 5,000 files
	testenv.SelfLinks(t, root)
	testenv.BigDir(t, root, 5000)
	// Sorted before the session, so a sweep in list order would meet them
	// first.
	f.storePoison("a-deep", root, specs(1, strings.Repeat("*/", 30)+"x"))
	f.storePoison("a-many", root, specs(1000, "big/nomatch-%d-*"))
	f.storePoison("a-slashes", "/", specs(1, "*/*/*/*/*/*/nomatch"))
	// Within the registration limits: the walk's own bounds stop these.
	f.register(store.Entity{Type: "session", ID: "a-wide", Lifecycle: ptr("completed"), ArtifactsRoot: root, Artifacts: specs(100, "big/nomatch-%d-*")})
	f.register(store.Entity{Type: "session", ID: "a-root", Lifecycle: ptr("completed"), ArtifactsRoot: "/", Artifacts: specs(1, "*/*/*/*/nomatch")})

	cmd := testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "s1", PID: cmd.Process.Pid})
	f.sweep()
	if e := f.get("session", "s1"); e.Health != state.HealthRunning {
		t.Fatalf("live session: %s", e.Health)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	t0 := time.Now()
	f.sweep()
	// The budget-free bound: poison that was walked unbounded would take
	// minutes (self-links) where the bounded checks take well under a
	// second; the ceiling is generous so that load never fails it.
	if took := time.Since(t0); took > 30*time.Second {
		t.Errorf("the sweep took %s", took)
	}
	if e := f.get("session", "s1"); e.Health != state.HealthProcessDead || e.DeadSince.IsZero() {
		t.Fatalf("killed session after the sweep: health %s dead_since %v", e.Health, e.DeadSince)
	}
	for id, bound := range map[string]string{
		"a-deep":    "has 31 path components (limit 16)",
		"a-many":    "declares 1000 artifacts (limit 100)",
		"a-slashes": "has 6 components with wildcards (limit 4)",
		"a-wide":    "(limit ", // 10000 entries, or the 200 ms clock on a slow machine
		"a-root":    "",        // entries or time, depending on the machine
	} {
		e := f.get("session", id)
		if e.Delivery != state.DeliveryUnknown || len(e.Reasons) != 1 || e.Reasons[0].Code != state.RunDeliveryCheckStopped ||
			!strings.Contains(e.Reasons[0].Message, bound) {
			t.Errorf("%s: delivery %s reasons %+v; want unknown, check_stopped naming %q", id, e.Delivery, e.Reasons, bound)
		}
	}

	f.clock.Advance(31 * time.Second)
	rep := f.enforce()
	if len(rep.Actions) != 1 || rep.Actions[0].ID != "s1" || !rep.Actions[0].Applied {
		t.Fatalf("enforce: %+v", rep.Actions)
	}
	if l := f.get("session", "s1").LifecycleOr(""); l != "aborted" {
		t.Fatalf("killed session ended as %s", l)
	}
	// The ended session's health is written once more (it is no longer a
	// running process); after that the host is unchanged, the bounded
	// checks say the same, and nothing is written.
	// a-wide and a-root are stopped by the entry limit or by the walk's
	// 200 ms clock, whichever comes first on this machine at this moment:
	// under load the bound named may change between two sweeps, and that
	// rewrite is the truth, not a spurious write. Every other entity must
	// be left as it was.
	f.sweep()
	before := map[string]store.Entity{}
	for _, id := range []string{"s1", "a-deep", "a-many", "a-slashes", "a-wide", "a-root"} {
		before[id] = f.get("session", id)
	}
	rep = f.sweep()
	flipped := 0
	for id, b := range before {
		a := f.get("session", id)
		if a.Health == b.Health && a.Delivery == b.Delivery && reflect.DeepEqual(a.Reasons, b.Reasons) {
			continue
		}
		if (id == "a-wide" || id == "a-root") && len(a.Reasons) == 1 && a.Reasons[0].Code == state.RunDeliveryCheckStopped && a.Reasons[0].Message != b.Reasons[0].Message {
			flipped++
			continue
		}
		t.Errorf("a second sweep rewrote %s: %+v, was %+v", id, a.Reasons, b.Reasons)
	}
	if rep.Written != flipped {
		t.Errorf("a second sweep wrote %d observations; %d were a walk stopped by the other bound", rep.Written, flipped)
	}
}

// TestLivenessBeforeArtifactWork: a sweep whose budget is gone before the
// artifact checks still judged every process (the liveness pass comes
// first), records nothing for the checks it did not reach, and the next
// sweeps take them in turn.
func TestLivenessBeforeArtifactWork(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "review.md"), []byte("done"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f.register(store.Entity{Type: "session", ID: fmt.Sprintf("a-%d", i), Lifecycle: ptr("completed"), ArtifactsRoot: dir, Artifacts: specs(1, "review.md")})
	}
	dead := testenv.DeadPID(t)
	f.register(store.Entity{Type: "session", ID: "z-dead", PID: dead})

	f.r.Settings.SweepBudget = time.Nanosecond
	_, err := f.r.Sweep(context.Background())
	if !errors.Is(err, ErrSweepOverBudget) {
		t.Fatalf("sweep: %v, want over budget", err)
	}
	if e := f.get("session", "z-dead"); e.Health != state.HealthProcessDead || e.DeadSince.IsZero() {
		t.Fatalf("the dead session, listed last, was not judged: %s", e.Health)
	}
	passed := func() int {
		n := 0
		for i := range 3 {
			if f.get("session", fmt.Sprintf("a-%d", i)).Delivery == state.DeliveryPassed {
				n++
			}
		}
		return n
	}
	// The first artifact check always runs; the rest wait for the next
	// sweeps, which start where this one stopped.
	for want := 1; want <= 3; want++ {
		if got := passed(); got != want {
			t.Fatalf("%d contracts checked, want %d", got, want)
		}
		if want < 3 {
			_, _ = f.r.Sweep(context.Background())
		}
	}
}
