package reaper

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// countingStore counts what the reaper reads of its store: the rows of
// its lists (decoded in full, or keys and revisions alone) and its point
// reads. gone, when set, is a row that vanishes after its page's keys
// were read: its point read finds nothing.
type countingStore struct {
	Store
	rows, revisions, gets int
	gone                  string
}

func (c *countingStore) List(ctx context.Context, f store.Filter) ([]store.Entity, error) {
	list, err := c.Store.List(ctx, f)
	if f.RevisionsOnly {
		c.revisions += len(list)
	} else {
		c.rows += len(list)
	}
	return list, err
}

func (c *countingStore) Get(ctx context.Context, typ, id string) (store.Entity, error) {
	c.gets++
	if id == c.gone {
		return store.Entity{}, fmt.Errorf("entity %s/%s: %w", typ, id, store.ErrNotFound)
	}
	return c.Store.Get(ctx, typ, id)
}

func (c *countingStore) reset() { c.rows, c.revisions, c.gets = 0, 0, 0 }

// BenchmarkDueJobsRows is what enforce_terminal and reap_phantoms read of
// a host of n open entities none of which is due: a tenth live processes,
// the rest without a pid and with a fresh heartbeat file, all swept once.
// rows/run counts the entities each run's lists and point reads returned.
func BenchmarkDueJobsRows(b *testing.B) {
	const n = 1000
	dir, st, host, w := benchStore(b)
	for i := range n {
		hb := filepath.Join(dir, "hb-"+strconv.Itoa(i))
		if err := os.WriteFile(hb, nil, 0o644); err != nil {
			b.Fatal(err)
		}
		e := store.Entity{Type: "session", ID: fmt.Sprintf("s-%d", i), HeartbeatFile: hb}
		if i%10 == 0 {
			cmd := exec.Command("sleep", "600")
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			e.PID = cmd.Process.Pid
		}
		if _, err := w.Register(context.Background(), transitions.Registration{Entity: e, Actor: transitions.ActorOrchestrator}); err != nil {
			b.Fatal(err)
		}
	}
	cs := &countingStore{Store: st}
	r := &Reaper{Store: cs, Writer: w, Prober: host, HostID: host.HostID(), Settings: DefaultSettings}
	r.Settings.SweepBudget = time.Hour
	if _, err := r.Sweep(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, job := range []struct {
		name string
		run  func(context.Context) (Report, error)
	}{{JobEnforceTerminal, r.EnforceTerminal}, {JobReapPhantoms, r.ReapPhantoms}} {
		b.Run(job.name, func(b *testing.B) {
			cs.reset()
			for b.Loop() {
				rep, err := job.run(context.Background())
				if err != nil || len(rep.Actions) != 0 {
					b.Fatalf("%+v %v: nothing is due", rep.Actions, err)
				}
			}
			b.ReportMetric(float64(cs.rows+cs.revisions+cs.gets)/float64(b.N), "rows/run")
		})
	}
}

// TestSweepDecodesOnlyWhatChanged: a sweep soon after the last reads the
// host's keys and revisions and decodes only the rows written since, a
// few by a point read each, many by their page; it judges each row as it
// is now, and a row gone between the two reads ends no walk early.
func TestSweepDecodesOnlyWhatChanged(t *testing.T) {
	f := newFixture(t)
	f.r.sweepPage = 16 // more than two changed rows of a page: the page
	cs := &countingStore{Store: f.st}
	f.r.Store = cs
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		f.register(store.Entity{Type: "session", ID: fmt.Sprintf("s-%02d", i), PID: dead.Process.Pid})
	}
	f.sweep() // records the deaths
	f.sweep() // the rows it wrote, read whole and kept
	ctx := context.Background()

	cs.reset()
	if rep := f.sweep(); rep.Checked != 20 || rep.Written != 0 || cs.rows != 0 || cs.gets != 0 || cs.revisions != 20 {
		t.Fatalf("unchanged: checked %d wrote %d; %d rows, %d point reads, %d revisions", rep.Checked, rep.Written, cs.rows, cs.gets, cs.revisions)
	}

	// One row written since: read by itself, and judged as it is now (its
	// heartbeat's progress is in its finding's evidence).
	if err := f.st.RecordHeartbeat(ctx, "session", "s-03", f.clock.Now(), "half way"); err != nil {
		t.Fatal(err)
	}
	cs.reset()
	if rep := f.sweep(); rep.Checked != 20 || rep.Written != 1 || cs.rows != 0 || cs.gets != 1 {
		t.Fatalf("one written: checked %d wrote %d; %d rows, %d point reads", rep.Checked, rep.Written, cs.rows, cs.gets)
	}
	if ev := f.get("session", "s-03").Reasons[0].Evidence[0].Detail; !strings.Contains(ev, "half way") {
		t.Errorf("the new row was not judged: %q", ev)
	}

	f.sweep() // its own write, read again

	// Many rows of the first page written since: the page, read whole.
	for _, id := range []string{"s-01", "s-02", "s-04", "s-05"} {
		if err := f.st.RecordHeartbeat(ctx, "session", id, f.clock.Now(), "moved"); err != nil {
			t.Fatal(err)
		}
	}
	cs.reset()
	if rep := f.sweep(); rep.Checked != 20 || rep.Written != 4 || cs.rows != 16 || cs.gets != 0 {
		t.Fatalf("four written: checked %d wrote %d; %d rows, %d point reads", rep.Checked, rep.Written, cs.rows, cs.gets)
	}

	f.sweep()

	// The last row of the first page written, then gone before its point
	// read: the walk goes on to the second page.
	if err := f.st.RecordHeartbeat(ctx, "session", "s-15", f.clock.Now(), "going"); err != nil {
		t.Fatal(err)
	}
	cs.reset()
	cs.gone = "s-15"
	if rep := f.sweep(); rep.Checked != 19 || cs.gets != 1 {
		t.Fatalf("one gone: checked %d; %d point reads", rep.Checked, cs.gets)
	}
}

// TestSweepAMinuteApartKeepsNothing: a sweep that follows the last by
// more than keepWithin reads the host as before and keeps nothing: at the
// default schedule the kept entities' memory would buy little.
func TestSweepAMinuteApartKeepsNothing(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.st}
	f.r.Store = cs
	for i := range 3 {
		f.register(store.Entity{Type: "session", ID: fmt.Sprintf("s-%d", i)})
	}
	f.sweep()
	f.sweep()
	f.r.keptMu.Lock()
	kept := f.r.kept != nil && len(f.r.kept.m) == 3
	f.r.lastSweep = time.Now().Add(-time.Minute)
	f.r.keptMu.Unlock()
	if !kept {
		t.Fatal("sweeps a moment apart kept nothing")
	}
	cs.reset()
	if rep := f.sweep(); rep.Checked != 3 || cs.revisions != 0 || cs.rows != 3 {
		t.Fatalf("a minute apart: checked %d; %d revisions, %d rows", rep.Checked, cs.revisions, cs.rows)
	}
	f.r.keptMu.Lock()
	defer f.r.keptMu.Unlock()
	if f.r.kept != nil {
		t.Errorf("a sweep a minute after the last kept %d entities", len(f.r.kept.m))
	}
}

// TestDueJobsReadOnlyTheDue: enforce_terminal and reap_phantoms read only
// the rows that may be due, not the host's open entities: nothing while
// none is, the orphan alone once phantom_after has passed.
func TestDueJobsReadOnlyTheDue(t *testing.T) {
	f := newFixture(t)
	cs := &countingStore{Store: f.st}
	f.r.Store = cs
	for i := range 3 {
		f.register(store.Entity{Type: "session", ID: fmt.Sprintf("live-%d", i), PID: testenv.Sleep(t).Process.Pid})
	}
	f.register(store.Entity{Type: "session", ID: "orphan", PID: testenv.Sleep(t).Process.Pid, SupervisorPID: testenv.DeadPID(t)})
	f.register(store.Entity{Type: "show", ID: "sh", Lifecycle: ptr("active")})
	f.sweep()
	if f.get("session", "orphan").Health != state.HealthOrphaned {
		t.Fatal("the orphan is not recorded orphaned")
	}
	cs.reset()
	if rep := f.enforce(); len(rep.Actions) != 0 || cs.rows+cs.gets != 0 {
		t.Errorf("enforce_terminal, none due: %+v; %d rows, %d point reads", rep.Actions, cs.rows, cs.gets)
	}
	// The show is a candidate by its plays, not its row: read, not acted on.
	if rep := f.reap(); len(rep.Actions) != 0 || cs.rows != 1 || cs.gets != 0 {
		t.Errorf("reap_phantoms, none due: %+v; %d rows, %d point reads", rep.Actions, cs.rows, cs.gets)
	}
	f.clock.Advance(61 * time.Minute)
	cs.reset()
	rep := f.reap()
	if len(rep.Actions) != 1 || rep.Actions[0].ID != "orphan" || cs.rows != 2 {
		t.Errorf("reap_phantoms, the orphan due: %+v; %d rows", rep.Actions, cs.rows)
	}
}
