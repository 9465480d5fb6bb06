package reaper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

type fixture struct {
	t     *testing.T
	st    *sqlite.Store
	w     *transitions.Writer
	r     *Reaper
	host  *probe.Host
	clock *testenv.Clock
	// timers are the reaper's deadlines (Reaper.After) on the test's
	// clock: sweep runs those due first.
	timers []fixtureTimer
}

type fixtureTimer struct {
	at time.Time
	fn func()
}

// fire runs the reaper's deadlines that are due on the test's clock.
func (f *fixture) fire() {
	for {
		i := slices.IndexFunc(f.timers, func(t fixtureTimer) bool { return !t.at.After(f.clock.Now()) })
		if i < 0 {
			return
		}
		t := f.timers[i]
		f.timers = slices.Delete(f.timers, i, i+1)
		t.fn()
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	host := probe.NewHost()
	c := testenv.NewClock(time.Now())
	w := &transitions.Writer{Store: st, Now: c.Now, Ident: host}
	settings := DefaultSettings
	settings.TerminalGrace = 30 * time.Second
	settings.PhantomAfter = time.Hour
	// Pages of two: every job that reads the host a page at a time (the
	// sweep, reap_phantoms) crosses pages in every test with more than
	// two entities.
	r := &Reaper{Store: st, Writer: w, Prober: host, HostID: host.HostID(), Settings: settings, Now: c.Now, sweepPage: 2}
	f := &fixture{t: t, st: st, w: w, r: r, host: host, clock: c}
	r.After = func(d time.Duration, fn func()) {
		f.timers = append(f.timers, fixtureTimer{at: c.Now().Add(d), fn: fn})
	}
	return f
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func (f *fixture) register(e store.Entity) {
	f.t.Helper()
	f.registerAs(e, transitions.PeerPrincipal(os.Getuid(), ""))
}

// registerAs registers e as p.
func (f *fixture) registerAs(e store.Entity, p transitions.Principal) {
	f.t.Helper()
	if e.Lifecycle == nil {
		l := "running"
		e.Lifecycle = &l
	}
	// As a caller the kernel names (the local socket) would: by
	// default the test's own uid, the owner of its processes.
	reg := transitions.Registration{Entity: e, Actor: transitions.ActorOrchestrator, Principal: p}
	if _, err := f.w.Register(context.Background(), reg); err != nil {
		f.t.Fatalf("register %s/%s: %v", e.Type, e.ID, err)
	}
}

func (f *fixture) get(typ, id string) store.Entity {
	f.t.Helper()
	e, err := f.st.Get(context.Background(), typ, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *fixture) sweep() Report {
	f.t.Helper()
	f.fire()
	rep, err := f.r.Sweep(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func (f *fixture) enforce() Report {
	f.t.Helper()
	rep, err := f.r.EnforceTerminal(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func (f *fixture) reap() Report {
	f.t.Helper()
	rep, err := f.r.ReapPhantoms(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func (f *fixture) terminalRows(typ, id string) []store.AuditRow {
	f.t.Helper()
	rows, err := f.st.Transitions(context.Background(), typ, id)
	if err != nil {
		f.t.Fatal(err)
	}
	g, _ := transitions.Lookup(typ)
	var out []store.AuditRow
	for _, r := range rows {
		if g.IsTerminal(r.To) {
			out = append(out, r)
		}
	}
	return out
}

func ptr(s string) *string { return &s }

func TestKilledProcessIsAbortedAfterGraceNotBefore(t *testing.T) {
	f := newFixture(t)
	cmd := testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "s1", PID: cmd.Process.Pid})
	f.sweep()
	if e := f.get("session", "s1"); e.Health != state.HealthRunning || !e.DeadSince.IsZero() {
		t.Fatalf("live process: health %s dead_since %v", e.Health, e.DeadSince)
	}
	cmd.Process.Kill()
	cmd.Wait()

	f.sweep()
	e := f.get("session", "s1")
	if e.Health != state.HealthProcessDead || e.DeadSince.IsZero() || len(e.Reasons) == 0 || e.Reasons[0].Code != state.RunHealthProcessDead {
		t.Fatalf("after kill: %+v", e)
	}
	// Inside the grace: nothing.
	f.clock.Advance(29 * time.Second)
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Fatalf("enforced inside the grace: %+v", rep.Actions)
	}
	if f.get("session", "s1").LifecycleOr("") != "running" {
		t.Fatal("ended inside the grace")
	}
	f.clock.Advance(2 * time.Second)
	rep := f.enforce()
	if len(rep.Actions) != 1 || !rep.Actions[0].Applied || rep.Actions[0].To != "aborted" {
		t.Fatalf("after the grace: %+v", rep.Actions)
	}
	e = f.get("session", "s1")
	if e.LifecycleOr("") != "aborted" || e.TransitionReason == nil || e.TransitionReason.Code != state.SystemHealthProcessDeadNoTerminal {
		t.Fatalf("ended as %s with %+v", e.LifecycleOr(""), e.TransitionReason)
	}
	rows := f.terminalRows("session", "s1")
	if len(rows) != 1 || rows[0].Actor != "reaper" || len(rows[0].Evidence) != 1 || !strings.Contains(rows[0].Evidence[0].Detail, "not running") {
		t.Fatalf("audit %+v", rows)
	}
	// A terminal state is a latch: nothing more happens.
	f.clock.Advance(time.Hour)
	f.sweep()
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Fatalf("enforced twice: %+v", rep.Actions)
	}
	if rep := f.reap(); len(rep.Actions) != 0 {
		t.Fatalf("reaped a terminal entity: %+v", rep.Actions)
	}
}

func TestOwnersOwnEndInsideGraceWins(t *testing.T) {
	f := newFixture(t)
	f.register(store.Entity{Type: "session", ID: "s1", PID: testenv.DeadPID(t)})
	f.sweep()
	f.clock.Advance(10 * time.Second)
	if _, err := f.w.Transition(context.Background(), transitions.Request{Type: "session", ID: "s1", To: "completed", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	f.sweep()
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Fatalf("enforced over the owner's end: %+v", rep.Actions)
	}
	rows := f.terminalRows("session", "s1")
	if len(rows) != 1 || rows[0].To != "completed" {
		t.Fatalf("terminal rows %+v", rows)
	}
	if e := f.get("session", "s1"); e.Health != state.HealthOK {
		t.Errorf("ended entity whose process is gone: health %s, want ok", e.Health)
	}
}

func TestRaceWithOwnerAtWriteTime(t *testing.T) {
	// The owner's end lands between the reaper's decision and its write:
	// the compare-and-set makes the owner win, with no second terminal row.
	f := newFixture(t)
	f.register(store.Entity{Type: "session", ID: "s1", PID: testenv.DeadPID(t)})
	f.sweep()
	f.clock.Advance(time.Minute)
	a := Action{Type: "session", ID: "s1", From: "running", To: "aborted", Reason: state.SystemHealthProcessDeadNoTerminal}
	if _, err := f.w.Transition(context.Background(), transitions.Request{Type: "session", ID: "s1", To: "completed", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	if err := f.r.apply(context.Background(), &a, state.Observed(a.Reason, "x"), ""); err != nil {
		t.Fatal(err)
	}
	if a.Applied || !strings.Contains(a.Skipped, "lost the race") {
		t.Fatalf("action %+v", a)
	}
	if rows := f.terminalRows("session", "s1"); len(rows) != 1 || rows[0].To != "completed" {
		t.Fatalf("terminal rows %+v", rows)
	}
}

func TestReusedPIDNeverReadsAliveAndIsNeverSignalled(t *testing.T) {
	f := newFixture(t)
	live := testenv.Sleep(t)
	f.r.Settings.KillOrphans = true
	f.r.Settings.KillUIDs = []int{os.Getuid()} // this test's own processes, root's too when run as root
	var signalled []int
	f.r.Signal = func(pid, sig int) error { signalled = append(signalled, pid); return nil }
	// The pid is live, but the recorded start time is another process's.
	f.register(store.Entity{Type: "session", ID: "s1", PID: live.Process.Pid, PIDStartTime: unixAt(1_000_000)})
	f.sweep()
	e := f.get("session", "s1")
	if e.Health != state.HealthProcessDead || e.Reasons[0].Code != state.RunHealthPIDReused {
		t.Fatalf("reused pid read as %s %+v", e.Health, e.Reasons)
	}
	f.clock.Advance(2 * time.Hour)
	f.enforce()
	f.reap()
	if f.get("session", "s1").LifecycleOr("") != "aborted" {
		t.Fatal("the entity of a reused pid was not ended")
	}
	if len(signalled) != 0 || !alive(live.Process.Pid) {
		t.Fatalf("the live process that reused the pid was signalled: %v", signalled)
	}
}

func TestUnknownAndStaleHeartbeatNeverEnd(t *testing.T) {
	f := newFixture(t)
	live := testenv.Sleep(t)
	hb := filepath.Join(t.TempDir(), "s.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(hb, old, old); err != nil {
		t.Fatal(err)
	}
	f.register(store.Entity{Type: "session", ID: "stale", PID: live.Process.Pid, HeartbeatFile: hb})
	f.register(store.Entity{Type: "session", ID: "nopid"})
	// Another host's pid is never checked here.
	f.register(store.Entity{Type: "session", ID: "remote", PID: testenv.DeadPID(t), HostID: "some-other-host"})
	f.sweep()
	// Its first registration started its state's clock: a file older than
	// that is not a stall yet (issue 23, observation 3).
	if e := f.get("session", "stale"); e.Health != state.HealthRunning {
		t.Fatalf("just registered with an old heartbeat file: %s, want running", e.Health)
	}
	if e := f.get("session", "nopid"); e.Health != state.HealthUnknown || !e.DeadSince.IsZero() {
		t.Fatalf("no pid: %s", e.Health)
	}
	f.clock.Advance(2 * time.Hour)
	f.sweep()
	if e := f.get("session", "stale"); e.Health != state.HealthStalled {
		t.Fatalf("stale heartbeat: %s", e.Health)
	}
	f.clock.Advance(48 * time.Hour)
	f.sweep()
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Fatalf("enforced: %+v", rep.Actions)
	}
	if rep := f.reap(); len(rep.Actions) != 0 {
		t.Fatalf("reaped: %+v", rep.Actions)
	}
	for _, id := range []string{"stale", "nopid", "remote"} {
		if l := f.get("session", id).LifecycleOr(""); l != "running" {
			t.Errorf("%s ended as %s", id, l)
		}
	}
	// Judged by its heartbeat alone (none): disconnected, never dead.
	if r := f.get("session", "remote"); r.Health != state.HealthDisconnected || !r.DeadSince.IsZero() {
		t.Errorf("another host's entity: health %s, dead since %v; want disconnected, never dead", r.Health, r.DeadSince)
	}
}

// TestRemoteEntityJudgedByItsHeartbeat: an entity of another host is never
// process-checked here, and its heartbeat file (a path on its own host) is
// not read; a fresh posted heartbeat reads running, a stale one
// disconnected (docs/reference/state-model.md, Probing), and neither ends it.
func TestRemoteEntityJudgedByItsHeartbeat(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A local file at the remote entity's path, fresh: must not count.
	hb := filepath.Join(t.TempDir(), "r.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.register(store.Entity{Type: "session", ID: "r1", PID: testenv.DeadPID(t), HostID: "other", HeartbeatFile: hb})
	if err := f.st.RecordHeartbeat(ctx, "session", "r1", f.clock.Now(), ""); err != nil {
		t.Fatal(err)
	}
	f.sweep()
	if e := f.get("session", "r1"); e.Health != state.HealthRunning || !e.DeadSince.IsZero() {
		t.Fatalf("fresh posted heartbeat: health %s dead since %v, want running", e.Health, e.DeadSince)
	}
	f.clock.Advance(time.Hour)
	touch := f.clock.Now()
	if err := os.Chtimes(hb, touch, touch); err != nil {
		t.Fatal(err)
	}
	f.sweep()
	e := f.get("session", "r1")
	if e.Health != state.HealthDisconnected || len(e.Reasons) == 0 || e.Reasons[0].Code != state.RunHealthDisconnected {
		t.Fatalf("posted heartbeat an hour old (local file fresh): health %s reasons %+v, want disconnected", e.Health, e.Reasons)
	}
	f.clock.Advance(48 * time.Hour)
	f.sweep()
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Fatalf("enforced on another host's entity: %+v", rep.Actions)
	}
	if rep := f.reap(); len(rep.Actions) != 0 {
		t.Fatalf("reaped another host's entity: %+v", rep.Actions)
	}
	if l := f.get("session", "r1").LifecycleOr(""); l != "running" {
		t.Errorf("ended as %s", l)
	}
}

func TestFirstDeathSurvivesRestart(t *testing.T) {
	f := newFixture(t)
	f.register(store.Entity{Type: "session", ID: "s1", PID: testenv.DeadPID(t)})
	f.sweep()
	first := f.get("session", "s1").DeadSince
	f.clock.Advance(20 * time.Second)
	// A new daemon (same database) keeps the first-death time: the grace
	// does not start over, and it does not forget the death either.
	restarted := &Reaper{Store: f.st, Writer: f.w, Prober: probe.NewHost(), HostID: f.r.HostID, Settings: f.r.Settings, Now: f.clock.Now}
	if _, err := restarted.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.get("session", "s1").DeadSince; got != first {
		t.Fatalf("dead_since moved from %v to %v across a restart", first, got)
	}
	f.clock.Advance(11 * time.Second)
	rep, err := restarted.EnforceTerminal(context.Background())
	if err != nil || len(rep.Actions) != 1 || !rep.Actions[0].Applied {
		t.Fatalf("restarted enforcement: %+v %v", rep, err)
	}
}

func TestSweepWritesNothingOnUnchangedHost(t *testing.T) {
	f := newFixture(t)
	live := testenv.Sleep(t)
	hb := filepath.Join(t.TempDir(), "hb")
	os.WriteFile(hb, nil, 0o644)
	old := time.Now().Add(-15 * time.Minute)
	os.Chtimes(hb, old, old)
	f.register(store.Entity{Type: "session", ID: "idle", PID: live.Process.Pid, HeartbeatFile: hb})
	f.register(store.Entity{Type: "session", ID: "dead", PID: testenv.DeadPID(t)})
	f.register(store.Entity{Type: "show", ID: "sh", Lifecycle: ptr("active")})
	if rep := f.sweep(); rep.Written != 3 {
		t.Fatalf("first sweep wrote %d, want 3", rep.Written)
	}
	var before int64
	testenv.SQL(t, f.st.Path()).QueryRow("SELECT SUM(updated_at) FROM entities").Scan(&before)
	f.clock.Advance(time.Minute) // ages change, findings do not
	if rep := f.sweep(); rep.Written != 0 || rep.Checked != 3 {
		t.Fatalf("second sweep over an unchanged host: %+v", rep)
	}
	var after int64
	testenv.SQL(t, f.st.Path()).QueryRow("SELECT SUM(updated_at) FROM entities").Scan(&after)
	if before != after {
		t.Error("rows were rewritten")
	}
}

func TestPhantomOrphanReapedAndKilledWhenAsked(t *testing.T) {
	f := newFixture(t)
	orphan := testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "o1", PID: orphan.Process.Pid, SupervisorPID: testenv.DeadPID(t)})
	f.sweep()
	if e := f.get("session", "o1"); e.Health != state.HealthOrphaned {
		t.Fatalf("health %s", e.Health)
	}
	f.clock.Advance(30 * time.Minute)
	if rep := f.reap(); len(rep.Actions) != 0 {
		t.Fatalf("reaped before phantom_after: %+v", rep.Actions)
	}
	f.clock.Advance(31 * time.Minute)
	f.r.Settings.KillOrphans = true
	f.r.Settings.KillUIDs = []int{os.Getuid()} // this test's own processes, root's too when run as root
	f.r.Settings.KillGrace = 100 * time.Millisecond
	rep := f.reap()
	if len(rep.Actions) != 1 || rep.Actions[0].Reason != state.SystemReaperPhantomOrphaned || rep.Actions[0].To != "aborted" {
		t.Fatalf("reap: %+v", rep.Actions)
	}
	// kill_orphans sent SIGTERM to the verified process: it is gone.
	done := make(chan error, 1)
	go func() { done <- orphan.Wait() }()
	select {
	case <-done:
	case <-time.After(ceiling):
		t.Fatalf("orphan still running %s after kill_orphans; last seen: %s", ceiling, procState(orphan.Process.Pid))
	}
}

// TestOrphanWritingItsHeartbeatIsNotAPhantom: "no activity" includes the
// heartbeat file. An orphan (supervisor dead) that still touches its
// heartbeat file is left alone; once the file goes quiet for phantom_after
// it is reaped.
func TestOrphanWritingItsHeartbeatIsNotAPhantom(t *testing.T) {
	f := newFixture(t)
	orphan := testenv.Sleep(t)
	hb := filepath.Join(t.TempDir(), "o.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.register(store.Entity{Type: "session", ID: "o1", PID: orphan.Process.Pid, SupervisorPID: testenv.DeadPID(t), HeartbeatFile: hb})
	touch := func(at time.Time) {
		t.Helper()
		if err := os.Chtimes(hb, at, at); err != nil {
			t.Fatal(err)
		}
	}
	touch(f.clock.Now())
	f.sweep()
	if e := f.get("session", "o1"); e.Health != state.HealthOrphaned {
		t.Fatalf("health %s", e.Health)
	}
	f.clock.Advance(2 * time.Hour)
	touch(f.clock.Now().Add(-time.Minute))
	if rep := f.reap(); len(rep.Actions) != 0 {
		t.Fatalf("reaped an orphan whose heartbeat is a minute old: %+v", rep.Actions)
	}
	touch(f.clock.Now().Add(-61 * time.Minute))
	if rep := f.reap(); len(rep.Actions) != 1 || rep.Actions[0].Reason != state.SystemReaperPhantomOrphaned {
		t.Fatalf("an orphan quiet for 61m (phantom_after 1h) not reaped: %+v", rep.Actions)
	}
}

// TestReusedSupervisorPIDIsNotTheSupervisor: the supervisor's start time
// is recorded at registration, so a process that later holds the dead
// supervisor's pid (here: a live process whose start time differs from
// the recorded one) does not pass for it, and the work reads orphaned.
func TestReusedSupervisorPIDIsNotTheSupervisor(t *testing.T) {
	f := newFixture(t)
	work, stranger := testenv.Sleep(t), testenv.Sleep(t)
	f.register(store.Entity{Type: "session", ID: "w1", PID: work.Process.Pid, SupervisorPID: stranger.Process.Pid})
	if e := f.get("session", "w1"); e.SupervisorStartTime.IsZero() {
		t.Fatal("the supervisor's start time was not recorded at registration")
	}
	f.sweep()
	if e := f.get("session", "w1"); e.Health != state.HealthRunning {
		t.Fatalf("with its real supervisor alive: health %s", e.Health)
	}
	// The recorded supervisor started long before the process now at its pid.
	if _, err := testenv.SQL(t, f.st.Path()).Exec("UPDATE entities SET supervisor_start_time = supervisor_start_time - 1000 WHERE id = 'w1'"); err != nil {
		t.Fatal(err)
	}
	f.sweep()
	if e := f.get("session", "w1"); e.Health != state.HealthOrphaned {
		t.Errorf("supervisor pid held by another process: health %s, want orphaned", e.Health)
	}
}

// TestRemoteHostWithItsOwnDaemonIsLeftToIt: when another host has a
// daemon (it marks its presence in the shared store), that host's
// entities are its daemon's to judge, by process; this daemon's sweep
// leaves them alone instead of giving a second, heartbeat-only verdict,
// even once that daemon is silent: then the leader's JudgeHosts reads them
// disconnected, then lost, and never ends them.
func TestRemoteHostWithItsOwnDaemonIsLeftToIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.register(store.Entity{Type: "session", ID: "r1", PID: testenv.DeadPID(t), HostID: "other"})
	seenAt := f.clock.Now()
	if err := f.st.MarkDaemon(ctx, "other", seenAt); err != nil {
		t.Fatal(err)
	}
	f.r.Settings.HostDisconnectedAfter, f.r.Settings.HostLostAfter = time.Minute, 15*time.Minute
	seen, err := f.st.DaemonsSeen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		after      time.Duration
		wantHealth state.Health
		wantCode   state.ReasonCode
	}{
		{0, state.HealthUnknown, ""},
		{59 * time.Second, state.HealthUnknown, ""},
		{2 * time.Minute, state.HealthDisconnected, state.SystemHostDisconnected},
		{10 * time.Minute, state.HealthDisconnected, state.SystemHostDisconnected},
		{16 * time.Minute, state.HealthLost, state.SystemHostLost},
	}
	for _, st := range steps {
		f.clock.Set(seenAt.Add(st.after))
		f.sweep()
		f.enforce()
		f.reap()
		if _, err := f.r.JudgeHosts(ctx, seen); err != nil {
			t.Fatal(err)
		}
		e := f.get("session", "r1")
		if e.Health != st.wantHealth {
			t.Errorf("silent %s: health %s, want %s", st.after, e.Health, st.wantHealth)
		}
		if st.wantCode != "" && (len(e.Reasons) != 1 || e.Reasons[0].Code != st.wantCode) {
			t.Errorf("silent %s: reasons %+v, want one %s", st.after, e.Reasons, st.wantCode)
		}
		if e.Terminal || e.LifecycleOr("") != "running" {
			t.Errorf("silent %s: another host's entity was ended: %s", st.after, e.LifecycleOr(""))
		}
	}
	// Judging again changes nothing.
	rep, err := f.r.JudgeHosts(ctx, seen)
	if err != nil || rep.Written != 0 || len(rep.Lost) != 1 {
		t.Errorf("a second judgement: %+v, %v; want no write, one lost host", rep, err)
	}
	// The host's daemon comes back after the leader read the presence it
	// judges by (a stale seen): the leader writes nothing over it.
	f.register(store.Entity{Type: "session", ID: "r2", PID: testenv.DeadPID(t), HostID: "other"})
	if err := f.st.MarkDaemon(ctx, "other", f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if rep, err := f.r.JudgeHosts(ctx, seen); err != nil || rep.Written != 0 {
		t.Errorf("judged with a stale presence after the host came back: %+v, %v", rep, err)
	}
	if e := f.get("session", "r2"); e.Health == state.HealthLost || e.Health == state.HealthDisconnected {
		t.Errorf("a returned host's entity judged silent from a stale presence: %s", e.Health)
	}
	// Its own host is never judged silent, whatever the table says.
	if err := f.st.MarkDaemon(ctx, f.r.HostID, seenAt); err != nil {
		t.Fatal(err)
	}
	f.register(store.Entity{Type: "session", ID: "mine", PID: os.Getpid()})
	seen, _ = f.st.DaemonsSeen(ctx)
	if _, err := f.r.JudgeHosts(ctx, seen); err != nil {
		t.Fatal(err)
	}
	if e := f.get("session", "mine"); e.Health == state.HealthLost || e.Health == state.HealthDisconnected {
		t.Errorf("this host's own entity judged silent: %s", e.Health)
	}
}

// TestHostlessWorkOnlyOnTheLeader: a host-less team whose show completed
// is closed by the leader only; a daemon that does not lead leaves it,
// and a host-less schedule, alone.
func TestHostlessWorkOnlyOnTheLeader(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leading := false
	f.r.Leads = func() bool { return leading }
	f.register(store.Entity{Type: "show", ID: "s1", Lifecycle: strp("completed")})
	f.register(store.Entity{Type: "team", ID: "t1", Lifecycle: strp("active"), ParentType: "show", ParentID: "s1"})
	f.register(store.Entity{Type: "schedule", ID: "nightly", Lifecycle: strp("enabled"), ScheduleCron: "* * * * *"})
	for _, id := range []string{"s1", "t1"} {
		typ := map[string]string{"s1": "show", "t1": "team"}[id]
		if h := f.get(typ, id).HostID; h != "" {
			t.Fatalf("%s/%s registered with host %q, want host-less", typ, id, h)
		}
	}
	f.clock.Advance(time.Hour)
	rows := func() int { return len(f.terminalRows("team", "t1")) }
	f.reap()
	if _, err := f.r.CheckSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := f.r.reapPhantomEntity(ctx, f.get("team", "t1")); ok || err != nil {
		t.Errorf("ReapPhantomEntity on a follower: %+v %v %v", a, ok, err)
	}
	if rows() != 0 || f.get("team", "t1").LifecycleOr("") != "active" {
		t.Fatalf("a follower closed a host-less team")
	}
	if h := f.get("schedule", "nightly").Health; h != state.HealthUnknown {
		t.Errorf("a follower judged a host-less schedule: %s", h)
	}
	leading = true
	f.reap()
	f.reap()
	if got := f.get("team", "t1").LifecycleOr(""); got != "closed" || rows() != 1 {
		t.Errorf("leader: team %s with %d terminal rows, want closed with exactly one", got, rows())
	}
	if _, err := f.r.CheckSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if h := f.get("schedule", "nightly").Health; h != state.HealthMisfired {
		t.Errorf("leader: host-less schedule %s, want misfired", h)
	}
}

// TestReRegisterKeepsTheHost: a re-registration that names no host keeps
// the entity's host: its kept pid is that host's, and claiming it for this
// host would have this host probe, and maybe end, whatever local process
// has that number (here: one that is dead locally).
func TestReRegisterKeepsTheHost(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.register(store.Entity{Type: "session", ID: "r1", PID: testenv.DeadPID(t), HostID: "other"})
	if _, err := f.w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: "r1", Label: "renamed"}, Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	e := f.get("session", "r1")
	if e.HostID != "other" || e.PID == 0 || e.Label != "renamed" {
		t.Fatalf("after a rename: host %q pid %d label %q", e.HostID, e.PID, e.Label)
	}
	f.sweep()
	f.clock.Advance(2 * time.Hour)
	f.sweep()
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Fatalf("this host ended another host's entity after a rename: %+v", rep.Actions)
	}
	if e := f.get("session", "r1"); !e.DeadSince.IsZero() {
		t.Errorf("another host's pid was checked here: dead since %v", e.DeadSince)
	}
	// Moving it to a host without saying which pid it has there is refused.
	_, err := f.w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: "r1", HostID: f.r.HostID}, Actor: transitions.ActorOrchestrator})
	if !errors.Is(err, transitions.ErrInvalidInput) {
		t.Errorf("host change without a pid: %v", err)
	}
}

// TestKillOrphansSharesOneGrace: orphans that ignore SIGTERM all get
// SIGTERM first, then SIGKILL after one kill_grace, instead of the run
// waiting a kill_grace per orphan.
func TestKillOrphansSharesOneGrace(t *testing.T) {
	f := newFixture(t)
	supervisor := testenv.DeadPID(t)
	var procs []*exec.Cmd
	for i := range 3 {
		// The ignored SIGTERM survives exec, so sleep itself ignores it.
		cmd := exec.Command("sh", "-c", `trap "" TERM; exec sleep 300`)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		procs = append(procs, cmd)
		f.register(store.Entity{Type: "session", ID: fmt.Sprintf("o%d", i), PID: cmd.Process.Pid, SupervisorPID: supervisor})
	}
	// Let the shells reach exec so the recorded start time is sleep's.
	for _, c := range procs {
		waitComm(t, c.Process.Pid, "sleep")
	}
	f.sweep()
	f.clock.Advance(2 * time.Hour)
	f.r.Settings.KillOrphans = true
	f.r.Settings.KillUIDs = []int{os.Getuid()} // this test's own processes, root's too when run as root
	f.r.Settings.KillGrace = 200 * time.Millisecond
	var mu sync.Mutex
	var sent []string
	f.r.Signal = func(pid, sig int) error {
		mu.Lock()
		sent = append(sent, syscall.Signal(sig).String())
		mu.Unlock()
		return syscall.Kill(pid, syscall.Signal(sig))
	}
	if rep := f.reap(); len(rep.Actions) != 3 {
		t.Fatalf("reap: %+v", rep.Actions)
	}
	want := []string{"terminated", "terminated", "terminated", "killed", "killed", "killed"}
	if fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Errorf("signals %v, want %v", sent, want)
	}
	for _, c := range procs {
		if err := c.Wait(); err == nil {
			t.Errorf("pid %d exited cleanly, want killed", c.Process.Pid)
		}
	}
}

// ceiling is the generous wait for what a real process does on its own
// time (exec, exit after a signal): a loaded machine only makes it slower.
const ceiling = 2 * time.Minute

// procState is pid's state line in /proc, for a wait's report.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Sprintf("pid %d: %v", pid, err)
	}
	return strings.TrimSpace(string(b))
}

// waitComm waits until pid runs the named program.
func waitComm(t *testing.T, pid int, name string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("pid %d to run %s", pid, name), ceiling, func() (bool, string) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return err == nil && strings.TrimSpace(string(b)) == name, fmt.Sprintf("comm %q (%v)", b, err)
	})
}

func TestPhantomDeadReapedWhenEnforcementCouldNot(t *testing.T) {
	f := newFixture(t)
	f.register(store.Entity{Type: "invocation", ID: "i1", PID: testenv.DeadPID(t)})
	f.sweep()
	f.clock.Advance(2 * time.Hour)
	rep := f.reap()
	if len(rep.Actions) != 1 || rep.Actions[0].Reason != state.SystemReaperPhantomProcessDead || rep.Actions[0].To != "failed" {
		t.Fatalf("reap: %+v", rep.Actions)
	}
}

func TestOrchestrationRules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.register(store.Entity{Type: "show", ID: "sh1", Lifecycle: ptr("archived")})
	f.register(store.Entity{Type: "show", ID: "sh2", Lifecycle: ptr("active")})
	f.register(store.Entity{Type: "team", ID: "t-orphan", Lifecycle: ptr("active"), ParentType: "show", ParentID: "sh1"})
	// A show with an outcome is finished for its team, archived or not.
	f.register(store.Entity{Type: "show", ID: "sh3", Lifecycle: ptr("completed")})
	f.register(store.Entity{Type: "show", ID: "sh4", Lifecycle: ptr("active")})
	f.register(store.Entity{Type: "team", ID: "t-done", Lifecycle: ptr("active"), ParentType: "show", ParentID: "sh3"})
	f.register(store.Entity{Type: "team", ID: "t-ok", Lifecycle: ptr("active"), ParentType: "show", ParentID: "sh4"})
	f.register(store.Entity{Type: "play", ID: "p0", Lifecycle: ptr("failed"), ParentType: "show", ParentID: "sh2", Metadata: []byte(`{"critical_path":true}`)})
	f.register(store.Entity{Type: "play", ID: "p1", Lifecycle: ptr("queued"), DependsOn: []string{"p0"}})
	f.register(store.Entity{Type: "play", ID: "p2", Lifecycle: ptr("planned"), DependsOn: []string{"ghost"}})
	f.register(store.Entity{Type: "play", ID: "p3", Lifecycle: ptr("planned"), DependsOn: []string{"p1x"}})
	f.register(store.Entity{Type: "play", ID: "p1x", Lifecycle: ptr("queued")})
	// A dependency that ended without its work blocks as a failed one does;
	// one that merged does not.
	f.register(store.Entity{Type: "play", ID: "p-cancelled", Lifecycle: ptr("cancelled")})
	f.register(store.Entity{Type: "play", ID: "p-merged", Lifecycle: ptr("merged")})
	f.register(store.Entity{Type: "play", ID: "p4", Lifecycle: ptr("queued"), DependsOn: []string{"p-cancelled"}})
	f.register(store.Entity{Type: "play", ID: "p5", Lifecycle: ptr("queued"), DependsOn: []string{"p-merged"}})

	// Dry run first: says what it would do, writes nothing.
	f.r.Settings.DryRun = true
	dry := f.reap()
	if len(dry.Actions) != 6 || !dry.DryRun {
		t.Fatalf("dry run actions %+v", dry.Actions)
	}
	for _, a := range dry.Actions {
		if a.Applied || a.Skipped != "dry run" {
			t.Errorf("dry run applied %+v", a)
		}
	}
	var audit int
	testenv.SQL(t, f.st.Path()).QueryRow("SELECT COUNT(*) FROM transitions WHERE actor = 'reaper'").Scan(&audit)
	if audit != 0 {
		t.Fatalf("dry run wrote %d transitions", audit)
	}

	f.r.Settings.DryRun = false
	rep := f.reap()
	want := map[string]string{
		"team/t-orphan": "closed team.health.orphaned",
		"team/t-done":   "closed team.health.orphaned",
		"play/p4":       "blocked play.blocked.dependency_failed",
		"play/p1":       "blocked play.blocked.dependency_failed",
		"play/p2":       "blocked play.blocked.dependency_invalid",
		"show/sh2":      "failed show.failed.critical_path_blocked",
	}
	if len(rep.Actions) != len(want) {
		t.Fatalf("actions %+v", rep.Actions)
	}
	for _, a := range rep.Actions {
		if want[a.Type+"/"+a.ID] != a.To+" "+string(a.Reason) || !a.Applied {
			t.Errorf("unexpected %+v", a)
		}
	}
	for _, id := range []string{"t-ok"} {
		if l := f.get("team", id).LifecycleOr(""); l != "active" {
			t.Errorf("team %s: %s", id, l)
		}
	}
	for _, id := range []string{"p3", "p5"} {
		if l := f.get("play", id).LifecycleOr(""); l != "planned" && l != "queued" {
			t.Errorf("%s (dependency fine) became %s", id, l)
		}
	}
	e, _ := f.st.Get(ctx, "team", "t-orphan")
	if ns := transitions.Normalize(e, unixAt(0)); ns.Outcome != "closed" || ns.Reasons[0].Code != state.TeamHealthOrphaned {
		t.Errorf("team view %+v", ns)
	}
}

func TestMaxPerRunBoundsARun(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"a", "b", "c"} {
		f.register(store.Entity{Type: "session", ID: id, PID: testenv.DeadPID(t)})
	}
	f.sweep()
	f.clock.Advance(time.Minute)
	f.r.Settings.MaxPerRun = 2
	rep := f.enforce()
	if len(rep.Actions) != 2 || !rep.Truncated {
		t.Fatalf("first run %+v", rep)
	}
	rep = f.enforce()
	if len(rep.Actions) != 1 || rep.Truncated {
		t.Fatalf("second run %+v", rep)
	}
}

func TestSchedules(t *testing.T) {
	f := newFixture(t)
	now := f.clock.Now()
	f.register(store.Entity{Type: "schedule", ID: "misfired", Lifecycle: ptr("enabled"), ScheduleCron: "@every 10m", ScheduleLastFiredAt: now.Add(-30 * time.Minute)})
	f.register(store.Entity{Type: "schedule", ID: "due", Lifecycle: ptr("enabled"), ScheduleCron: "@every 10m", ScheduleLastFiredAt: now.Add(-12 * time.Minute)})
	f.register(store.Entity{Type: "schedule", ID: "fine", Lifecycle: ptr("enabled"), ScheduleCron: "@every 10m", ScheduleLastFiredAt: now.Add(-5 * time.Minute)})
	f.register(store.Entity{Type: "schedule", ID: "paused", Lifecycle: ptr("paused"), ScheduleCron: "@every 10m", ScheduleLastFiredAt: now.Add(-5 * time.Hour)})
	rep, err := f.r.CheckSchedules(context.Background())
	if err != nil || rep.Checked != 4 {
		t.Fatalf("%+v %v", rep, err)
	}
	want := map[string]state.Health{"misfired": state.HealthMisfired, "due": state.HealthDue, "fine": state.HealthOK, "paused": state.HealthOK}
	for id, h := range want {
		e := f.get("schedule", id)
		if e.Health != h {
			t.Errorf("%s: %s, want %s", id, e.Health, h)
		}
		ns := transitions.Normalize(e, unixAt(0))
		if id == "misfired" && (ns.Severity != state.SeverityCritical || ns.Reasons[0].Code != state.ScheduleHealthMisfired) {
			t.Errorf("misfired view %+v", ns)
		}
	}
	if rep, _ := f.r.CheckSchedules(context.Background()); rep.Written != 0 {
		t.Errorf("unchanged schedules rewritten: %+v", rep)
	}
	// Later, nothing new: the misfire's message names its moment, not its
	// lateness, so a later check rewrites nothing either.
	f.clock.Advance(5 * time.Second)
	if rep, _ := f.r.CheckSchedules(context.Background()); rep.Written != 0 {
		t.Errorf("schedules rewritten 5s later with nothing new: %+v", rep)
	}
}

// TestSweepOverBudgetResumesWhereItStopped: on a host too big for one
// sweep's budget, each sweep starts after the entity where the previous
// one stopped, so every entity gets probed instead of the first ones only;
// the same whether the store is read in one page or in many (the cursor
// is a key, the pages wrap round to it).
func TestSweepOverBudgetResumesWhereItStopped(t *testing.T) {
	for _, page := range []int{0, 1, 7, 64, 200} {
		t.Run(fmt.Sprintf("page %d", page), func(t *testing.T) {
			f := newFixture(t)
			f.r.sweepPage = page
			dead := testenv.DeadPID(t)
			const n = 200
			for i := range n {
				f.register(store.Entity{Type: "session", ID: fmt.Sprintf("s-%03d", i), PID: dead})
			}
			f.r.Settings.SweepBudget = time.Nanosecond
			probed := func() int {
				t.Helper()
				list, err := f.st.List(context.Background(), store.Filter{Type: "session"})
				if err != nil {
					t.Fatal(err)
				}
				k := 0
				for _, e := range list {
					if e.Health != state.HealthUnknown {
						k++
					}
				}
				return k
			}
			for i, want := range []int{64, 128, 192, n} {
				rep, err := f.r.Sweep(context.Background())
				if i < 3 && !errors.Is(err, ErrSweepOverBudget) {
					t.Fatalf("sweep %d: %v, want over budget", i+1, err)
				}
				if got := probed(); got != want {
					t.Fatalf("after sweep %d (%+v): %d entities probed, want %d", i+1, rep, got, want)
				}
			}
			// The fourth sweep wrapped around to the start: still over
			// budget, nothing new to find, and nothing starved.
			f.r.Settings.SweepBudget = time.Hour
			if rep, err := f.r.Sweep(context.Background()); err != nil || rep.Checked != n || rep.Written != 0 {
				t.Errorf("a full sweep after the rotation: %+v %v", rep, err)
			}
			// A full sweep cleared the cursor: the next reads from the
			// start, every entity once.
			if rep, err := f.r.Sweep(context.Background()); err != nil || rep.Checked != n {
				t.Errorf("the sweep after a full one: %+v %v", rep, err)
			}
		})
	}
}

// TestSweepPagerWrapsRoundTheCursor: a sweep resumed after a key reads
// every entity once, those past the key first, whatever the page size and
// wherever the key falls (on an entity, between two, past the last).
func TestSweepPagerWrapsRoundTheCursor(t *testing.T) {
	f := newFixture(t)
	for i := range 10 {
		f.register(store.Entity{Type: "session", ID: fmt.Sprintf("s-%d", i)})
	}
	f.register(store.Entity{Type: "play", ID: "p"})
	all := "play/p s-0 s-1 s-2 s-3 s-4 s-5 s-6 s-7 s-8 s-9"
	for _, tc := range []struct {
		name   string
		cursor *store.Key
		want   string
	}{
		{"no cursor", nil, all},
		{"on an entity", &store.Key{Type: "session", ID: "s-3"}, "s-4 s-5 s-6 s-7 s-8 s-9 play/p s-0 s-1 s-2 s-3"},
		{"between two", &store.Key{Type: "session", ID: "s-35"}, "s-4 s-5 s-6 s-7 s-8 s-9 play/p s-0 s-1 s-2 s-3"},
		{"on the last", &store.Key{Type: "session", ID: "s-9"}, all},
		{"past the last", &store.Key{Type: "zz"}, all},
		{"before the first", &store.Key{Type: "a"}, all},
	} {
		for _, page := range []int{1, 2, 3, 10, 11, 100} {
			f.r.sweepPage = page
			f.r.resume.clear()
			if tc.cursor != nil {
				f.r.resume.set(*tc.cursor)
			}
			p := f.r.sweepPages(store.Filter{})
			var got []string
			for reads := 0; ; reads++ {
				if reads > 30 {
					t.Fatalf("%s, page %d: no end (%v)", tc.name, page, got)
				}
				list, err := p.next(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if len(list) == 0 {
					break
				}
				if len(list) > page {
					t.Fatalf("%s, page %d: a page of %d", tc.name, page, len(list))
				}
				for _, e := range list {
					if e.Type == "session" {
						got = append(got, e.ID)
					} else {
						got = append(got, e.Type+"/"+e.ID)
					}
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("%s, page %d: %s, want %s", tc.name, page, g, tc.want)
			}
		}
	}
}

// TestScheduleResumedIsNotOwedItsPausedFires: a schedule paused for hours
// and enabled again is judged from the moment it was enabled, not from its
// last fire before the pause.
func TestScheduleResumedIsNotOwedItsPausedFires(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.register(store.Entity{Type: "schedule", ID: "nightly", Lifecycle: ptr("enabled"), ScheduleCron: "@every 10m", ScheduleLastFiredAt: f.clock.Now()})
	if _, err := f.w.Transition(ctx, transitions.Request{Type: "schedule", ID: "nightly", To: "paused", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(5 * time.Hour)
	if _, err := f.w.Transition(ctx, transitions.Request{Type: "schedule", ID: "nightly", To: "enabled", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want state.Health) {
		t.Helper()
		if _, err := f.r.CheckSchedules(ctx); err != nil {
			t.Fatal(err)
		}
		if h := f.get("schedule", "nightly").Health; h != want {
			t.Errorf("%s: health %s, want %s", when, h, want)
		}
	}
	check("just enabled", state.HealthOK)
	f.clock.Advance(12 * time.Minute)
	check("first fire after the resume 2m late", state.HealthDue)
	f.clock.Advance(10 * time.Minute)
	check("first fire after the resume 12m late", state.HealthMisfired)
}

// TestDeadBeforeRunningEndsAlongAnEdge: a process that died while its
// entity was still pending or queued ends in the nearest terminal its graph
// reaches from there (the type's dead-process terminal is not an edge from
// pending), once, instead of a refused write retried every run.
func TestDeadBeforeRunningEndsAlongAnEdge(t *testing.T) {
	f := newFixture(t)
	f.register(store.Entity{Type: "invocation", ID: "i1", Lifecycle: ptr("pending"), PID: testenv.DeadPID(t)})
	f.register(store.Entity{Type: "subagent", ID: "a1", Lifecycle: ptr("queued"), PID: testenv.DeadPID(t)})
	f.sweep()
	f.clock.Advance(time.Minute)
	rep := f.enforce()
	got := map[string]string{}
	for _, a := range rep.Actions {
		if !a.Applied {
			t.Errorf("%s/%s not applied: %s", a.Type, a.ID, a.Skipped)
		}
		got[a.Type+"/"+a.ID] = a.To
	}
	if got["invocation/i1"] != "cancelled" || got["subagent/a1"] != "cancelled" {
		t.Fatalf("ended as %v, want both cancelled", got)
	}
	if e := f.get("invocation", "i1"); e.TransitionReason == nil || e.TransitionReason.Code != state.SystemHealthProcessDeadNoTerminal {
		t.Errorf("reason %+v", e.TransitionReason)
	}
	if rep := f.enforce(); len(rep.Actions) != 0 {
		t.Errorf("a second run acted again: %+v", rep.Actions)
	}
}

// TestRunningDeliveryNotExpectedWithoutContract: a running entity with no
// artifact contract reads not_expected after a sweep, as at registration
// (nothing is due, ever); one with a contract reads unknown until it ends.
func TestRunningDeliveryNotExpectedWithoutContract(t *testing.T) {
	f := newFixture(t)
	live := testenv.Sleep(t)
	root := t.TempDir()
	f.register(store.Entity{Type: "session", ID: "plain", PID: live.Process.Pid})
	f.register(store.Entity{Type: "session", ID: "contract", PID: live.Process.Pid, ArtifactsRoot: root,
		Artifacts: []state.ArtifactSpec{{Path: "out.md", Required: true, Kind: state.ArtifactFile}}})
	f.sweep()
	if d := f.get("session", "plain").Delivery; d != state.DeliveryNotExpected {
		t.Errorf("no contract: delivery %s, want not_expected", d)
	}
	if d := f.get("session", "contract").Delivery; d != state.DeliveryUnknown {
		t.Errorf("contract, still running: delivery %s, want unknown", d)
	}
}

func strp(s string) *string { return &s }
