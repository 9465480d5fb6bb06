package monitor

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"
	"unique"

	"watchdog/internal/testenv"
	"watchdog/judge"
	"watchdog/pidwatch"
	"watchdog/state"
	"watchdog/store"
)

// TestDeadlines pins the pure deadline computation: which judgement comes
// when, from what.
func TestDeadlines(t *testing.T) {
	s := DefaultSettings
	// A session "waiting" (for input) is not working in its graph
	// (transitions.Waiting): no heartbeat deadline.
	waiting := session("w", 42)
	waiting.Lifecycle = strp("waiting")
	restarted := session("r", 42)
	restarted.HeartbeatAt, restarted.LifecycleAt = t0.Add(5*time.Minute), t0.Add(2*time.Hour)
	dead := session("d", 42)
	dead.Health, dead.DeadSince = state.HealthProcessDead, t0.Add(time.Hour)
	dead.LifecycleAt = t0.Add(50 * time.Minute) // its last activity
	enforced := dead
	schedule := store.Entity{Type: "schedule", ID: "nightly", Lifecycle: strp("enabled"), HostID: "h1",
		ScheduleCron: "0 3 * * *", ScheduleLastFiredAt: t0, CreatedAt: t0, LifecycleAt: t0}
	ended := session("e", 42)
	ended.Terminal = true
	posted := session("p", 42)
	posted.HeartbeatAt = t0.Add(30 * time.Minute)
	withFile := session("a", 42)
	withFile.HeartbeatFile = "/run/a.hb" // a source: ageing from the start
	for _, tc := range []struct {
		name string
		tr   tracked
		now  time.Time
		next time.Time
		due  job
	}{
		{name: "fresh start: idle after idle_after from the start", tr: testTracked(ptr(withFile), stampOf(t0)), now: t0,
			next: t0.Add(10 * time.Minute)},
		{name: "no heartbeat source: liveness alone, slow_after next", tr: testTracked(ptr(session("a", 42)), stampOf(t0)), now: t0,
			next: t0.Add(time.Hour)},
		{name: "posted heartbeat moves idle on", tr: testTracked(ptr(posted), stampOf(t0)), now: t0,
			next: t0.Add(40 * time.Minute)},
		{name: "a heartbeat file seen later moves it further", tr: testTracked(ptr(posted), stampOf(t0), func(tr *tracked) { tr.w().hbFile = stampOf(t0.Add(35 * time.Minute)) }), now: t0,
			next: t0.Add(45 * time.Minute)},
		{name: "after idle was judged, stalled is next", tr: testTracked(ptr(session("a", 42)), stampOf(t0.Add(10*time.Minute))), now: t0.Add(10 * time.Minute),
			next: t0.Add(60 * time.Minute)},
		{name: "slow's start and stalled coincide: one deadline", tr: testTracked(ptr(session("a", 42)), stampOf(t0.Add(11*time.Minute))), now: t0.Add(61 * time.Minute),
			next: t0.Add(60 * time.Minute), due: jobHeartbeat},
		{name: "slow_until is the last heartbeat boundary", tr: testTracked(ptr(session("a", 42)), stampOf(t0.Add(61*time.Minute))), now: t0.Add(61 * time.Minute),
			next: t0.Add(3 * time.Hour)},
		{name: "dead: enforcement at dead_since + terminal_grace", tr: testTracked(ptr(dead), stampOf(t0)), now: dead.DeadSince,
			next: dead.DeadSince.Add(30 * time.Second)},
		{name: "dead and quiet: enforcement and the phantom both due", tr: testTracked(ptr(dead), stampOf(t0)), now: t0.Add(2 * time.Hour),
			next: dead.DeadSince.Add(30 * time.Second), due: jobEnforce | jobPhantom},
		{name: "enforced once: only the phantom remains", tr: testTracked(ptr(enforced), stampOf(t0), func(tr *tracked) { tr.w().enforcedFor = stampOf(enforced.DeadSince) }), now: dead.DeadSince,
			next: t0.Add(110 * time.Minute)},
		{name: "an explicit check comes first", tr: testTracked(ptr(session("a", 42)), stampOf(t0), func(tr *tracked) { tr.checkAt = stampOf(t0.Add(time.Second)) }), now: t0.Add(time.Second),
			next: t0.Add(time.Second), due: jobCheck},
		{name: "schedule: next fire + misfire_grace", tr: testTracked(ptr(schedule), stampOf(t0)), now: t0,
			next: judge.NextFire(&schedule).Add(5 * time.Minute)},
		{name: "schedule judged for that fire: nothing", tr: testTracked(ptr(schedule), stampOf(t0), func(tr *tracked) { tr.w().scheduleFor = stampOf(judge.NextFire(&schedule)) }), now: t0},
		{name: "waiting, not working: no heartbeat deadline", tr: testTracked(ptr(waiting), stampOf(t0)), now: t0.Add(2 * time.Hour)},
		{name: "a new state ages the heartbeat from its start", tr: testTracked(ptr(restarted), stampOf(t0.Add(2*time.Hour))), now: t0.Add(2 * time.Hour),
			next: t0.Add(2*time.Hour + 10*time.Minute)},
		{name: "ended: nothing", tr: testTracked(ptr(ended), stampOf(t0), func(tr *tracked) { tr.checkAt = stampOf(t0) }), now: t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, due := deadlines(&tc.tr, "h1", s, tc.now)
			if !next.Equal(tc.next) || due != tc.due {
				t.Errorf("deadlines = %v (+%v), due %b; want %v (+%v), due %b", next, next.Sub(t0), due, tc.next, tc.next.Sub(t0), tc.due)
			}
		})
	}
}

func strp(s string) *string { return &s }

// TestHeapOrder: entries come out in deadline order, a moved entry takes
// its new place, a removed one never comes out.
func TestHeapOrder(t *testing.T) {
	var h deadlineHeap
	rng := rand.New(rand.NewSource(1))
	all := make([]*tracked, 200)
	for i := range all {
		all[i] = &tracked{f: facts{tb: typeBootOf(unique.Handle[typeBoot]{}, "session", ""), id: string(rune('a' + i%26))}, index: -1}
		h.schedule(all[i], t0.Add(time.Duration(rng.Intn(1000))*time.Second))
	}
	for i := 0; i < 50; i++ { // move some
		h.schedule(all[i], t0.Add(time.Duration(rng.Intn(1000))*time.Second))
	}
	for i := 50; i < 80; i++ { // remove some
		h.schedule(all[i], time.Time{})
		if all[i].index != -1 {
			t.Fatalf("removed entry keeps index %d", all[i].index)
		}
	}
	var got []time.Time
	for h.Len() > 0 {
		got = append(got, heap.Pop(&h).(*tracked).at.time())
	}
	if len(got) != 170 {
		t.Fatalf("%d entries came out, want 170", len(got))
	}
	if !slices.IsSortedFunc(got, time.Time.Compare) {
		t.Errorf("not in deadline order: %v", got)
	}
}

// TestWatchModes: a verified process is watched by pidfd, one the kernel
// cannot watch is polled, a gone or reused one is checked at once, and
// one without a recorded identity is never watched.
func TestWatchModes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		err           error
		noIdentity    bool
		unreadable    bool // the identity check cannot read /proc (EMFILE, permission)
		pidfd, polled int
		first         []string // calls at once
		afterPoll     []string // calls one poll interval later
	}{
		{name: "watched", pidfd: 1},
		{name: "unsupported", err: pidwatch.ErrUnsupported, polled: 1, afterPoll: []string{"check session/s"}},
		{name: "out of fds", err: pidwatch.ErrNoFD, polled: 1, afterPoll: []string{"check session/s"}},
		{name: "over the cap", err: fmt.Errorf("watch pid 42: %w", pidwatch.ErrBudget), polled: 1, afterPoll: []string{"check session/s"}},
		{name: "another error", err: syscall.EINVAL, polled: 1, afterPoll: []string{"check session/s"}},
		{name: "gone", err: pidwatch.ErrGone, first: []string{"check session/s"}},
		{name: "not the same", err: pidwatch.ErrNotSame, first: []string{"check session/s"}},
		{name: "no identity recorded", noIdentity: true, polled: 1, afterPoll: []string{"check session/s"}},
		{name: "identity unreadable", unreadable: true, polled: 1, afterPoll: []string{"check session/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.w.errs[42] = tc.err
			h.unreadable[42] = tc.unreadable
			e := session("s", 42)
			if tc.noIdentity {
				e.PIDStartTime, e.PIDStartTicks = time.Time{}, 0
			}
			h.update(e)
			if got := whats(h.step()); !reflect.DeepEqual(got, tc.first) {
				t.Errorf("at once: %v, want %v", got, tc.first)
			}
			if pidfd, polled := h.m.Watching(); pidfd != tc.pidfd || polled != tc.polled {
				t.Errorf("Watching = %d, %d; want %d, %d", pidfd, polled, tc.pidfd, tc.polled)
			}
			if tc.noIdentity && h.w.sames != 0 {
				t.Error("a pid without a recorded identity was offered to the watcher")
			}
			if got := whats(h.advance(DefaultSettings.PollInterval)); !reflect.DeepEqual(got, tc.afterPoll) {
				t.Errorf("a poll interval later: %v, want %v", got, tc.afterPoll)
			}
			if tc.polled > 0 {
				if got := whats(h.advance(DefaultSettings.PollInterval)); len(got) != 1 {
					t.Errorf("the poll did not come round again: %v", got)
				}
			}
		})
	}
}

// TestPolledForWantOfAnFD: a process polled because no pidfd could be had
// (the watcher's cap, EMFILE, an unreadable identity) is offered to the
// watcher again at each poll, and watched by pidfd once there is room;
// one polled for a reason that does not pass (no pidfds on this kernel,
// no recorded identity) is not.
func TestPolledForWantOfAnFD(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		unreadable bool
		noIdentity bool
		rewatched  bool
	}{
		{name: "over the cap", err: fmt.Errorf("watch pid 42: %w", pidwatch.ErrBudget), rewatched: true},
		{name: "out of fds", err: pidwatch.ErrNoFD, rewatched: true},
		{name: "identity unreadable", unreadable: true, rewatched: true},
		{name: "unsupported", err: pidwatch.ErrUnsupported},
		{name: "no identity recorded", noIdentity: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.w.errs[42] = tc.err
			h.unreadable[42] = tc.unreadable
			e := session("s", 42)
			if tc.noIdentity {
				e.PIDStartTime, e.PIDStartTicks = time.Time{}, 0
			}
			h.update(e)
			h.step()
			tries := h.w.tries[42]
			// Still no room: polled again, and offered again.
			if got := whats(h.advance(DefaultSettings.PollInterval)); !reflect.DeepEqual(got, []string{"check session/s"}) {
				t.Fatalf("the poll: %v", got)
			}
			if again := h.w.tries[42] > tries; again != tc.rewatched {
				t.Errorf("offered to the watcher again at the poll: %v, want %v", again, tc.rewatched)
			}
			// Room now (a death freed a slot, the fds are back).
			delete(h.w.errs, 42)
			h.unreadable[42] = false
			h.advance(DefaultSettings.PollInterval)
			wantPidfd, wantPolled := 0, 1
			if tc.rewatched {
				wantPidfd, wantPolled = 1, 0
			}
			if pidfd, polled := h.m.Watching(); pidfd != wantPidfd || polled != wantPolled {
				t.Errorf("with room: Watching = %d, %d; want %d, %d", pidfd, polled, wantPidfd, wantPolled)
			}
			if tc.rewatched {
				if got := whats(h.advance(DefaultSettings.PollInterval)); len(got) != 0 {
					t.Errorf("still polled once watched: %v", got)
				}
			}
		})
	}
}

// TestSameAsksTheProbe: the identity check Watch runs after opening the
// pidfd is the probe's, on the recorded start time and boot.
func TestSameAsksTheProbe(t *testing.T) {
	h := newHarness(t, Settings{})
	h.m.opt.Prober = aliveProber{notSame: map[int]bool{42: true}}
	h.update(session("s", 42))
	if got := whats(h.step()); !reflect.DeepEqual(got, []string{"check session/s"}) {
		t.Errorf("a reused pid: %v, want an immediate check", got)
	}
	if pidfd, _ := h.m.Watching(); pidfd != 0 || len(h.w.watched) != 0 {
		t.Errorf("a reused pid is watched: %v", h.w.watched)
	}
}

// TestDeathThenEnforcement: a death is one check, the event carrying the
// exit status, and one enforcement at dead_since + terminal_grace, told
// the death so it does not look for it again.
func TestDeathThenEnforcement(t *testing.T) {
	h := newHarness(t, Settings{})
	h.update(session("s", 42))
	h.step()
	at := h.clock.Now()
	got := h.death(pidwatch.Death{Key: "session/s", PID: 42, At: at, Exit: pidwatch.Exit{Known: true, Code: 3}})
	if len(got) != 1 || got[0].what != "check" || !got[0].ev.Died || !got[0].ev.At.Equal(at) || got[0].ev.Exit == nil || *got[0].ev.Exit != (state.ExitStatus{Code: 3, At: at}) {
		t.Fatalf("calls %v (%+v), want one check told the death and its exit status 3", whats(got), got)
	}
	if pidfd, _ := h.m.Watching(); pidfd != 0 {
		t.Errorf("a dead process still counts as watched")
	}
	// The check's write comes back through Update.
	dead := session("s", 42)
	dead.Health, dead.DeadSince = state.HealthProcessDead, at
	h.update(dead)
	if got := whats(h.advance(29 * time.Second)); len(got) != 0 {
		t.Errorf("before terminal_grace: %v", got)
	}
	if got := h.advance(time.Second); !reflect.DeepEqual(whats(got), []string{"enforce session/s"}) || !got[0].ev.Died {
		t.Errorf("at terminal_grace: %v (%+v), want one enforcement told the death", whats(got), got)
	}
	if got := whats(h.advance(10 * time.Minute)); len(got) != 0 {
		t.Errorf("enforcement fired again: %v", got)
	}
	if len(h.w.forgot) != 0 {
		t.Errorf("a dead process's watch was forgotten by hand (pidwatch ends it): %v", h.w.forgot)
	}
}

// TestDeathExitLater: the first Death without a status, the second with
// it (a pidfd alone, its process reaped late): both are checked, the
// second told the status, and the pid is not watched again in between.
func TestDeathExitLater(t *testing.T) {
	h := newHarness(t, Settings{})
	h.update(session("s", 42))
	h.step()
	at := h.clock.Now()
	if got := whats(h.death(pidwatch.Death{Key: "session/s", PID: 42, At: at})); !reflect.DeepEqual(got, []string{"check session/s"}) {
		t.Fatalf("first death: %v", got)
	}
	h.update(session("s", 42)) // an unrelated change before the check's write comes back
	if got := whats(h.step()); len(got) != 0 || h.w.sames != 1 {
		t.Errorf("the dead pid was watched again (%d identity checks), calls %v", h.w.sames, got)
	}
	got := h.death(pidwatch.Death{Key: "session/s", PID: 42, At: at.Add(time.Second), Exit: pidwatch.Exit{Known: true, Signal: syscall.SIGKILL}})
	if !reflect.DeepEqual(whats(got), []string{"check session/s"}) || got[0].ev.Exit == nil || got[0].ev.Exit.Signal != 9 || got[0].ev.Exit.Code != 0 {
		t.Errorf("second death: %v %+v", whats(got), got)
	}
	if got := whats(h.death(pidwatch.Death{Key: "session/s", PID: 42, At: at.Add(time.Second), Exit: pidwatch.Exit{Known: true, Signal: syscall.SIGKILL}})); len(got) != 0 {
		t.Errorf("the same death told again acted: %v", got)
	}
	if got := whats(h.death(pidwatch.Death{Key: "session/t", PID: 43, At: at})); len(got) != 0 {
		t.Errorf("a death of an unknown key acted: %v", got)
	}
}

// TestUpdateReschedules: a posted heartbeat moves the idle deadline, a new
// pid moves the watch, a reload moves every deadline, and Forget and an
// end drop the entity.
func TestUpdateReschedules(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	h.update(e)
	h.step()
	// No heartbeat source: judged on liveness alone, slow_after is next.
	if at := h.m.h.peek().at.time(); !at.Equal(t0.Add(time.Hour)) {
		t.Fatalf("first deadline %v, want +1h (no heartbeat source: no idle deadline)", at.Sub(t0))
	}
	e.HeartbeatAt = t0.Add(5 * time.Minute)
	h.update(e)
	h.step()
	if at := h.m.h.peek().at.time(); !at.Equal(t0.Add(15 * time.Minute)) {
		t.Errorf("after a heartbeat: deadline %v, want +15m", at.Sub(t0))
	}
	h.m.SetSettings(Settings{Settings: judge.Settings{Thresholds: judge.Thresholds{IdleAfter: time.Minute, StalledAfter: 2 * time.Minute}}})
	h.step()
	if at := h.m.h.peek().at.time(); !at.Equal(t0.Add(6 * time.Minute)) {
		t.Errorf("after a reload: deadline %v, want +6m", at.Sub(t0))
	}
	e.PID = 43
	h.update(e)
	h.step()
	if h.w.watched["session/s"] != 43 || !slices.Equal(h.w.forgot, []string{"session/s"}) {
		t.Errorf("new pid: watched %v, forgot %v", h.w.watched, h.w.forgot)
	}
	h.m.Forget("session", "s")
	h.step()
	if h.m.h.Len() != 0 || h.m.ents.len() != 0 || len(h.w.watched) != 0 {
		t.Errorf("after Forget: heap %d, entities %d, watched %v", h.m.h.Len(), h.m.ents.len(), h.w.watched)
	}
	if pidfd, polled := h.m.Watching(); pidfd != 0 || polled != 0 {
		t.Errorf("after Forget: Watching = %d, %d", pidfd, polled)
	}
	ended := session("x", 44)
	h.update(ended)
	h.step()
	ended.Terminal = true
	h.update(ended)
	h.step()
	if h.m.h.Len() != 0 || len(h.w.watched) != 0 {
		t.Errorf("an ended entity is still tracked: heap %d, watched %v", h.m.h.Len(), h.w.watched)
	}
	other := session("o", 45)
	other.HostID = "h2"
	h.update(other)
	h.step()
	if h.m.h.Len() != 0 || len(h.w.watched) != 0 {
		t.Errorf("another host's entity is tracked: heap %d, watched %v", h.m.h.Len(), h.w.watched)
	}
}

// TestHeartbeatFileLearnedAtDeadline: the file is stat'ed when the
// deadline comes; a fresh mtime only moves the deadline, a stale one
// brings the check.
func TestHeartbeatFileLearnedAtDeadline(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.HeartbeatFile = "/run/s.hb"
	h.update(e)
	h.step()
	h.mtime["/run/s.hb"] = t0.Add(8 * time.Minute)
	if got := whats(h.advance(10 * time.Minute)); len(got) != 0 {
		t.Errorf("a fresh file still brought %v", got)
	}
	if at := h.m.h.peek().at.time(); !at.Equal(t0.Add(18 * time.Minute)) {
		t.Errorf("next deadline %v, want +18m (the mtime + idle_after)", at.Sub(t0))
	}
	if got := whats(h.advance(8 * time.Minute)); !reflect.DeepEqual(got, []string{"check session/s"}) {
		t.Errorf("a stale file: %v, want a check", got)
	}
}

// TestPostedHeartbeatToIdleChecksNow: an idle entity that posts a
// heartbeat is judged at once, not at its next threshold.
func TestPostedHeartbeatToIdleChecksNow(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.Health = state.HealthIdle
	h.update(e)
	h.step()
	e.HeartbeatAt = h.clock.Now()
	h.update(e)
	if got := whats(h.step()); !reflect.DeepEqual(got, []string{"check session/s"}) {
		t.Errorf("calls %v, want a check", got)
	}
}

// TestCheckErrorRetries: a failed check is tried again a poll later.
func TestCheckErrorRetries(t *testing.T) {
	h := newHarness(t, Settings{})
	h.w.errs[42] = pidwatch.ErrGone
	h.rec.err = errors.New("database is locked")
	h.update(session("s", 42))
	if got := whats(h.step()); len(got) != 1 {
		t.Fatalf("calls %v", got)
	}
	h.rec.err = nil
	if got := whats(h.advance(DefaultSettings.PollInterval)); len(got) != 1 {
		t.Errorf("no retry: %v", got)
	}
	if got := whats(h.advance(time.Hour)); len(got) > 1 {
		t.Errorf("retried after a success: %v", got)
	}
}

// TestRunFiresOnRealTime: Run's loop, on the real clock: a death on the
// channel is checked, a deadline already past fires, and Run ends with its
// context.
func TestRunFiresOnRealTime(t *testing.T) {
	rec, w := &recorder{}, newFakeWatcher()
	m := New(Options{Reaper: rec, Watcher: w, Prober: aliveProber{}, HostID: "h1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	now := time.Now()
	live := session("live", 42)
	live.StartedAt, live.CreatedAt, live.LifecycleAt = now, now, now
	dead := session("dead", 43)
	dead.StartedAt, dead.CreatedAt, dead.LifecycleAt = now, now, now
	dead.Health, dead.DeadSince = state.HealthProcessDead, now.Add(-time.Minute)
	m.Update(live)
	m.Update(dead)
	testenv.Eventually(t, "the past enforcement deadline fires", ceiling, func() (bool, string) {
		c := whats(rec.seen())
		return slices.Contains(c, "enforce session/dead"), "calls: " + join(c)
	})
	testenv.Eventually(t, "the live process is watched", ceiling, func() (bool, string) {
		pidfd, polled := m.Watching()
		return pidfd == 1, fmt.Sprintf("pidfd %d, polled %d", pidfd, polled)
	})
	w.deaths <- pidwatch.Death{Key: "session/live", PID: 42, At: time.Now()}
	testenv.Eventually(t, "the death is checked", ceiling, func() (bool, string) {
		c := whats(rec.seen())
		return slices.Contains(c, "check session/live"), "calls: " + join(c)
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// ceiling is the generous wait for what Run's goroutine does on the real
// clock: a loaded machine only makes it slower.
const ceiling = 2 * time.Minute

func join(s []string) string {
	out := ""
	for _, x := range s {
		out += x + "; "
	}
	return out
}

// ptr is the entity as the monitor keeps it, shared.
func ptr(e store.Entity) *store.Entity { return &e }

// TestResync: after the watcher dropped deaths, every process watched by
// pidfd is looked at: one the probe finds dead is handled as its death
// (checked at once, not watched again, enforced at terminal_grace), one
// it cannot read is checked through the reaper, a live one keeps its
// watch with no check, and a polled one is left to its poll.
func TestResync(t *testing.T) {
	h := newHarness(t, Settings{})
	h.w.errs[45] = pidwatch.ErrNoFD
	for i, pid := range []int{42, 43, 44, 45} {
		h.update(session(string(rune('a'+i)), pid))
	}
	h.step()
	if pidfd, polled := h.m.Watching(); pidfd != 3 || polled != 1 {
		t.Fatalf("Watching = %d, %d; want 3, 1", pidfd, polled)
	}
	// 43 died and its Death was dropped; 44's /proc cannot be read.
	h.m.opt.Prober = aliveProber{notSame: map[int]bool{43: true}, unreadable: map[int]bool{44: true}}
	h.m.resync(context.Background())
	if got := whats(h.rec.take()); !reflect.DeepEqual(got, []string{"check session/b"}) {
		t.Errorf("the resync itself: %v, want the dead one checked", got)
	}
	if got := whats(h.step()); !reflect.DeepEqual(got, []string{"check session/c"}) {
		t.Errorf("the turn after: %v, want the unreadable one checked", got)
	}
	if pidfd, polled := h.m.Watching(); pidfd != 2 || polled != 1 {
		t.Errorf("after the resync: Watching = %d, %d; want 2, 1 (the dead one no longer watched)", pidfd, polled)
	}
	if h.m.Resyncs() != 1 {
		t.Errorf("Resyncs = %d, want 1", h.m.Resyncs())
	}
	// An unrelated change before the check's write comes back does not
	// watch the dead pid again.
	h.update(session("b", 43))
	h.step()
	if h.w.tries[43] != 1 {
		t.Errorf("the dead pid was offered to the watcher again (%d tries)", h.w.tries[43])
	}
	dead := session("b", 43)
	dead.Health, dead.DeadSince = state.HealthProcessDead, h.clock.Now()
	h.update(dead)
	h.step()
	got := whats(h.advance(30 * time.Second))
	if !slices.Contains(got, "enforce session/b") || slices.Contains(got, "enforce session/a") {
		t.Errorf("at terminal_grace: %v, want the dead one enforced (and the live one not)", got)
	}
}

// TestRunAnswersResync: Run's loop takes the watcher's resync signal.
func TestRunAnswersResync(t *testing.T) {
	rec, w := &recorder{}, newFakeWatcher()
	m := New(Options{Reaper: rec, Watcher: w, Prober: aliveProber{}, HostID: "h1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	now := time.Now()
	e := session("s", 42)
	e.StartedAt, e.CreatedAt, e.LifecycleAt = now, now, now
	m.Update(e)
	testenv.Eventually(t, "the process watched", ceiling, func() (bool, string) {
		pidfd, polled := m.Watching()
		return pidfd == 1, fmt.Sprintf("pidfd %d, polled %d", pidfd, polled)
	})
	w.resync <- struct{}{}
	testenv.Eventually(t, "the resync answered", ceiling, func() (bool, string) {
		return m.Resyncs() == 1, fmt.Sprintf("resyncs %d, calls %s", m.Resyncs(), join(whats(rec.seen())))
	})
}

// TestEndedBeforeSeenIsJudgedOnce: a short job registered and ended
// between two of the monitor's looks reaches it only as ended, never
// judged (health unknown): it is checked once, as an end the monitor saw
// open is; an ended entity already judged, or ended before the failure
// window, is not.
func TestEndedBeforeSeenIsJudgedOnce(t *testing.T) {
	ended := func(id string, health state.Health, endedAgo time.Duration, h *harness) store.Entity {
		e := session(id, 42)
		done := "completed"
		e.Lifecycle, e.Terminal, e.Health = &done, true, health
		e.EndedAt = h.clock.Now().Add(-endedAgo)
		return e
	}
	for _, tc := range []struct {
		name   string
		health state.Health
		ago    time.Duration
		want   []string
	}{
		{"never judged, just ended", state.HealthUnknown, time.Second, []string{"check session/s"}},
		{"never judged, empty health", "", time.Second, []string{"check session/s"}},
		{"already judged", state.HealthOK, time.Second, nil},
		{"ended before the window", state.HealthUnknown, 2 * judge.DefaultSettings.Window(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Settings{})
			h.update(ended("s", tc.health, tc.ago, h))
			if got := whats(h.step()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("calls %v, want %v", got, tc.want)
			}
			if got := whats(h.advance(time.Hour)); len(got) != 0 {
				t.Errorf("an ended entity was judged again: %v", got)
			}
		})
	}
}

// TestStepReadsTheEntityWhole: with Options.Entity the monitor keeps only
// its facts of an entity, and a reaper step gets the entity whole as the
// view holds it then (fields the facts leave out, a newer version), with
// the monitor's own news of its process's death beside it (the event),
// never over another process's; an entity the view no longer holds is
// skipped.
func TestStepReadsTheEntityWhole(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.Label, e.Reasons = "nightly", []state.StateReason{{Code: "x.y"}}
	h.update(e)
	first := h.step()
	if tr := h.m.ents.get(key{"session", "s"}); tr == nil || tr.r().whole != nil {
		t.Fatalf("tracked %+v: the entity kept whole beside Options.Entity", tr)
	}
	if len(first) != 0 {
		t.Fatalf("calls %v before any death", whats(first))
	}
	at := h.clock.Now()
	got := h.death(pidwatch.Death{Key: "session/s", PID: 42, At: at, Exit: pidwatch.Exit{Known: true, Code: 3}})
	if len(got) != 1 || got[0].what != "check" {
		t.Fatalf("calls %v, want one check", whats(got))
	}
	if c := got[0].e; c.Label != "nightly" || len(c.Reasons) != 1 || got[0].ev.Exit == nil || got[0].ev.Exit.Code != 3 {
		t.Errorf("the check got %+v, %+v: want the whole entity and the exit status beside it", c, got[0].ev)
	}
	// The view now holds another process (its Update not applied yet):
	// the step reads it, without the first process's death over it.
	next := session("s", 77)
	next.PIDStartTicks = 2000
	h.ents["session/s"] = next
	tr := h.m.ents.get(key{"session", "s"})
	var seen store.Entity
	var told judge.Event
	if _, err := h.m.step(context.Background(), tr, func(_ context.Context, e store.Entity, ev judge.Event) (bool, error) {
		seen, told = e, ev
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen.PID != 77 || told.Died || told.Exit != nil || !seen.DeadSince.IsZero() {
		t.Errorf("step got pid %d event %+v dead_since %v: another process's entity must not carry the first's death", seen.PID, told, seen.DeadSince)
	}
	delete(h.ents, "session/s")
	ran := false
	if ok, err := h.m.step(context.Background(), tr, func(context.Context, store.Entity, judge.Event) (bool, error) { ran = true; return true, nil }); ok || err != nil || ran {
		t.Errorf("a step on an entity the view no longer holds ran (%v, %v, %v)", ran, ok, err)
	}
}

// TestStamps: a time comes back from a stamp as the same instant, the
// zero time as zero, the epoch as the epoch give or take a nanosecond,
// and times out of int64 nanoseconds' range as its ends.
func TestStamps(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"zero", time.Time{}, time.Time{}},
		{"a time with nanoseconds", time.Unix(1_800_000_000, 123_456_789).In(time.FixedZone("x", 3600)), time.Unix(1_800_000_000, 123_456_789)},
		{"the epoch", time.Unix(0, 0), time.Unix(0, 1)},
		{"before 1678", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), stampMin},
		{"after 2262", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), stampMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stampOf(tc.in).time(); !got.Equal(tc.want) {
				t.Errorf("stampOf(%v).time() = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// testTracked is e tracked by a monitor of host h1, judged up to judged,
// then each of sets applied.
func testTracked(e *store.Entity, judged stamp, sets ...func(*tracked)) tracked {
	tr := tracked{judged: judged, index: -1}
	tr.setFacts(e, "h1")
	for _, set := range sets {
		set(&tr)
	}
	return tr
}
