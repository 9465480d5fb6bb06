package monitor

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"watchdog/judge"
	"watchdog/pidwatch"
	"watchdog/state"
	"watchdog/store"
)

// casLoser is a reaper whose first checks lose to a transition that landed
// since the entity was read (the store's last_seq guard writes nothing).
type casLoser struct {
	*recorder
	lose int
}

func (c *casLoser) Observe(_ context.Context, e store.Entity, ev judge.Event) (bool, error) {
	c.add(call{what: "check", key: Key(e.Type, e.ID), e: e, ev: ev})
	if c.lose > 0 {
		c.lose--
		return false, nil
	}
	return true, nil
}

// A death checked on a copy older than a transition that just landed is
// written nowhere; the transition coming back through Update brings a
// check at once, not at the next sweep.
func TestDeathRacingATransitionIsCheckedAgain(t *testing.T) {
	h := newHarness(t, Settings{})
	h.m.opt.Reaper = &casLoser{recorder: h.rec, lose: 1}
	e := session("s", 42)
	e.LastSeq = 1
	h.update(e)
	h.step()
	if got := whats(h.death(pidwatch.Death{Key: "session/s", PID: 42, At: h.clock.Now()})); !slices.Contains(got, "check session/s") {
		t.Fatalf("the death brought %v, want a check", got)
	}
	e.LastSeq = 2
	h.update(e)
	if got := whats(h.step()); !slices.Equal(got, []string{"check session/s"}) {
		t.Errorf("after the transition came back: %v, want one check at once", got)
	}
}

// A process restarted under the same entity (a new pid, its predecessor
// recorded dead) is judged at once and watched again once it reads alive.
func TestRestartedProcessIsJudgedAndWatched(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	h.update(e)
	h.step()
	h.death(pidwatch.Death{Key: "session/s", PID: 42, At: h.clock.Now()})
	e.Health, e.DeadSince = state.HealthProcessDead, h.clock.Now()
	h.update(e)
	h.step()
	h.advance(5 * time.Second)

	e.PID, e.PIDStartTicks = 43, 2000 // re-registered; the store keeps health until judged
	h.update(e)
	if got := whats(h.step()); !slices.Equal(got, []string{"check session/s"}) {
		t.Fatalf("after the restart: %v, want one check at once", got)
	}
	e.Health, e.DeadSince = state.HealthRunning, time.Time{} // what that check recorded
	h.update(e)
	h.step()
	if pid := h.w.watched["session/s"]; pid != 43 {
		t.Errorf("watched %v, want the new pid 43 by pidfd", h.w.watched)
	}
}

// An entity judged idle by a heartbeat file inotify cannot watch (here:
// its directory does not exist) is re-judged as soon as a poll finds the
// file fresh again, not at the next sweep.
func TestHeartbeatFileFreshAgainIsRejudged(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.HeartbeatFile = "/nonexistent-dir/s.hb"
	h.mtime[e.HeartbeatFile] = t0
	h.update(e)
	h.step()
	h.advance(DefaultSettings.Thresholds.IdleAfter)
	e.Health = state.HealthIdle
	h.update(e)
	h.step()
	checks := 0
	for range 4 {
		h.mtime[e.HeartbeatFile] = h.clock.Now() // touched every 30 s from now on
		for _, c := range h.advance(30 * time.Second) {
			if c.what == "check" {
				checks++
			}
		}
		if checks > 0 {
			break
		}
	}
	if checks == 0 {
		t.Error("an idle entity whose heartbeat file is fresh again was not re-judged within two minutes")
	}
}

// blockingReaper's checks wait until release is closed.
type blockingReaper struct {
	*recorder
	entered chan struct{}
	release chan struct{}
}

func (b *blockingReaper) Observe(ctx context.Context, e store.Entity, ev judge.Event) (bool, error) {
	close(b.entered)
	<-b.release
	return b.recorder.Observe(ctx, e, ev)
}

// A step that does not return shows in Stuck, which the daemon reads
// before it feeds systemd's watchdog; between steps Stuck is 0.
func TestStuckMeasuresTheRunningStep(t *testing.T) {
	h := newHarness(t, Settings{})
	br := &blockingReaper{recorder: h.rec, entered: make(chan struct{}), release: make(chan struct{})}
	h.m.opt.Reaper = br
	if got := h.m.Stuck(h.clock.Now()); got != 0 {
		t.Fatalf("Stuck before any step = %s, want 0", got)
	}
	e := session("s", 42)
	e.Health = state.HealthUnknown // never judged: checked at first sight
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.update(e)
		h.step()
	}()
	select {
	case <-br.entered:
	case <-done:
		t.Fatal("no check ran")
	}
	if got := h.m.Stuck(h.clock.Now().Add(3 * time.Minute)); got < 3*time.Minute {
		t.Errorf("Stuck three minutes into a blocked step = %s", got)
	}
	close(br.release)
	<-done
	if got := h.m.Stuck(h.clock.Now()); got != 0 {
		t.Errorf("Stuck after the step returned = %s, want 0", got)
	}
}

// TestUpdatesWhileAnEmptyTurnRuns: writers hand entities in (the view's
// sync) while the loop takes a turn with nothing pending; under -race this
// caught the loop reading the writers' map outside the lock when it was
// empty.
func TestUpdatesWhileAnEmptyTurnRuns(t *testing.T) {
	h := newHarness(t, Settings{})
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			h.update(session(fmt.Sprintf("s%d", i%50), 1000+i%50))
		}
	}()
	for {
		select {
		case <-done:
			h.m.applyPending(ctx)
			if h.m.ents.len() != 50 {
				t.Fatalf("tracked %d entities, want 50", h.m.ents.len())
			}
			return
		default:
			h.m.applyPending(ctx)
		}
	}
}

// TestEndedEntityIsJudgedAtOnce: an entity whose owner records its end is
// checked once at that moment (its health as an ended entity's), then
// forgotten; not left with the health it had while it ran until the next
// sweep.
func TestEndedEntityIsJudgedAtOnce(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	h.update(e)
	h.step()
	done := "completed"
	e.Lifecycle, e.Terminal, e.LastSeq = &done, true, e.LastSeq+1
	h.update(e)
	if got := whats(h.step()); !slices.Equal(got, []string{"check session/s"}) {
		t.Fatalf("at its end: %v, want one check", got)
	}
	if h.m.ents.get(key{"session", "s"}) != nil {
		t.Fatal("the ended entity is still tracked")
	}
	h.update(e)
	if got := whats(h.step()); len(got) != 0 {
		t.Fatalf("an ended entity seen again: %v, want nothing", got)
	}
}

// A heartbeat file in a directory inotify watches: counted as watched,
// not polled; an event naming it re-judges an idle entity at once, one
// naming another file does nothing; the watch goes with the entity.
func TestHeartbeatFileEventRejudges(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.HeartbeatFile = filepath.Join(t.TempDir(), "s.hb")
	h.mtime[e.HeartbeatFile] = t0
	h.update(e)
	h.step()
	if w, p := h.m.HeartbeatFiles(); w != 1 || p != 0 {
		t.Fatalf("heartbeat files: %d watched, %d polled; want 1, 0", w, p)
	}
	h.advance(DefaultSettings.Thresholds.IdleAfter)
	e.Health = state.HealthIdle
	h.update(e)
	h.step()
	h.mtime[e.HeartbeatFile] = h.clock.Now()
	h.m.fileChanged(context.Background(), filepath.Join(filepath.Dir(e.HeartbeatFile), "other"))
	if got := whats(h.rec.take()); len(got) != 0 {
		t.Errorf("an event for another file: %v", got)
	}
	h.m.fileChanged(context.Background(), e.HeartbeatFile)
	if got := whats(h.rec.take()); !reflect.DeepEqual(got, []string{"check session/s"}) {
		t.Errorf("a touch of an idle entity's file: %v, want one check", got)
	}
	h.m.Forget("session", "s")
	h.step()
	if w, p := h.m.HeartbeatFiles(); w != 0 || p != 0 {
		t.Errorf("after the entity went: %d watched, %d polled", w, p)
	}
}

// A death whose first write did not land (a transition came first) is
// judged again with its exit status; a new process under the reused pid
// carries none of the old one's death.
func TestDeathOutlivesAMissedWriteNotAReusedPid(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.LastSeq = 1
	h.update(e)
	h.step()
	at := h.clock.Now()
	if got := h.death(pidwatch.Death{Key: "session/s", PID: 42, At: at, Exit: pidwatch.Exit{Known: true, Code: 3}}); len(got) != 1 || got[0].ev.Exit == nil {
		t.Fatalf("the death: %+v", got)
	}
	// The owner's transition landed first: the store refused the death's
	// write, and the change comes back without it.
	e.LastSeq = 2
	h.update(e)
	got := h.step()
	if len(got) != 1 || !got[0].ev.Died || got[0].ev.Exit == nil || got[0].ev.Exit.Code != 3 {
		t.Fatalf("after the transition: %+v, want a check told the death and its status", got)
	}
	// Re-registered to a new process that got pid 42 again.
	next := session("s", 42)
	next.LastSeq, next.PIDStartTicks = 3, 2000
	h.update(next)
	calls := h.step()
	if len(calls) == 0 {
		t.Fatal("the new process was not judged")
	}
	for _, c := range calls {
		if c.ev.Died || c.ev.Exit != nil {
			t.Errorf("the new process under pid 42 was told the old one's death: %+v", c.ev)
		}
	}
}
