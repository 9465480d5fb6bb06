package monitor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/judge"
	"watchdog/pidwatch"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// The fakes stand in for the reaper's per-entity entry points and
// pidwatch; the real ones are joined in the daemon and tested there.

type call struct {
	what string // check, enforce, phantom, schedule
	key  string
	e    store.Entity
	ev   judge.Event
}

type recorder struct {
	mu    sync.Mutex
	calls []call
	err   error // returned by Observe
}

func (r *recorder) add(c call) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *recorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

func (r *recorder) seen() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recorder) Observe(_ context.Context, e store.Entity, ev judge.Event) (bool, error) {
	r.add(call{what: "check", key: Key(e.Type, e.ID), e: e, ev: ev})
	return true, r.err
}

func (r *recorder) EnforceEntity(_ context.Context, e store.Entity, ev judge.Event) (bool, error) {
	r.add(call{what: "enforce", key: Key(e.Type, e.ID), e: e, ev: ev})
	return true, nil
}

func (r *recorder) ReapPhantomEntity(_ context.Context, e store.Entity) (bool, error) {
	r.add(call{what: "phantom", key: Key(e.Type, e.ID), e: e})
	return true, nil
}

func (r *recorder) CheckScheduleEntity(_ context.Context, e store.Entity) (bool, error) {
	r.add(call{what: "schedule", key: Key(e.Type, e.ID), e: e})
	return true, nil
}

// fakeWatcher answers Watch with errs[pid] (nil: watched) after asking
// same, as pidwatch does.
type fakeWatcher struct {
	mu      sync.Mutex
	errs    map[int]error
	watched map[string]int
	forgot  []string
	sames   int
	tries   map[int]int // Watch calls per pid
	deaths  chan pidwatch.Death
	resync  chan struct{}
}

func newFakeWatcher() *fakeWatcher {
	return &fakeWatcher{errs: map[int]error{}, watched: map[string]int{}, tries: map[int]int{}, deaths: make(chan pidwatch.Death, 16), resync: make(chan struct{}, 1)}
}

func (w *fakeWatcher) Watch(key string, pid int, same func() bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tries[pid]++
	if err := w.errs[pid]; err != nil {
		return err
	}
	w.sames++
	if !same() {
		return pidwatch.ErrNotSame
	}
	w.watched[key] = pid
	return nil
}

func (w *fakeWatcher) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.watched, key)
	w.forgot = append(w.forgot, key)
}

func (w *fakeWatcher) Deaths() <-chan pidwatch.Death { return w.deaths }

func (w *fakeWatcher) Resync() <-chan struct{} { return w.resync }

// aliveProber verifies every identity; notSame names the pids it refuses,
// unreadable those whose identity it cannot read (EMFILE, permission).
type aliveProber struct{ notSame, unreadable map[int]bool }

func (p aliveProber) CheckPID(t probe.PIDSubject) probe.PIDObservation {
	if p.unreadable[t.PID] {
		return probe.PIDObservation{Subject: t, Liveness: probe.Unknown, Cause: probe.CauseUnreadable}
	}
	if p.notSame[t.PID] {
		return probe.PIDObservation{Subject: t, Liveness: probe.Dead, Cause: probe.CausePIDReused}
	}
	return probe.PIDObservation{Subject: t, Liveness: probe.Alive, Cause: probe.CauseNone}
}

var t0 = time.Unix(1_800_000_000, 0)

// harness is a Monitor driven by hand: Update, then step() applies what
// was handed in and fires what is due at the clock's time, as one turn of
// Run's loop does.
type harness struct {
	m     *Monitor
	rec   *recorder
	w     *fakeWatcher
	clock *testenv.Clock
	mtime map[string]time.Time
	// links are the heartbeat files that are symlinks; lstats counts the
	// reads for the sweep (HeartbeatFileAt), of h.mtime as StatMtime's.
	links  map[string]bool
	lstats int
	// unreadable: pids whose identity the prober cannot read.
	unreadable map[int]bool
	// ents stands in for the live view: every entity handed in (update),
	// which the monitor reads whole for a reaper step (Options.Entity),
	// as the daemon's does.
	ents map[string]store.Entity
}

func newHarness(t *testing.T, s Settings) *harness {
	t.Helper()
	h := &harness{rec: &recorder{}, w: newFakeWatcher(), clock: testenv.NewClock(t0), mtime: map[string]time.Time{}, links: map[string]bool{}, unreadable: map[int]bool{}, ents: map[string]store.Entity{}}
	h.m = New(Options{
		Reaper: h.rec, Watcher: h.w, Prober: aliveProber{unreadable: h.unreadable},
		Entity: func(typ, id string) (store.Entity, bool) {
			e, ok := h.ents[Key(typ, id)]
			return e, ok
		},
		HostID: "h1", Settings: s, Now: h.clock.Now,
		StatMtime: func(e *store.Entity) (time.Time, error) {
			path := e.HeartbeatFile
			mt, ok := h.mtime[path]
			if !ok {
				return time.Time{}, fmt.Errorf("stat %s: %w", path, syscall.ENOENT)
			}
			return mt, nil
		},
	})
	h.m.lstat = func(e *store.Entity) (time.Time, bool, error) {
		h.lstats++
		if h.links[e.HeartbeatFile] {
			return t0, true, nil
		}
		mt, err := h.m.opt.StatMtime(e)
		return mt, false, err
	}
	return h
}

// update hands e to the monitor, as the view's hook does, and keeps it
// where Options.Entity reads it.
func (h *harness) update(e store.Entity) {
	h.ents[Key(e.Type, e.ID)] = e
	h.m.Update(e)
}

func (h *harness) step() []call {
	ctx := context.Background()
	h.m.applyPending(ctx)
	h.m.fireDue(ctx)
	return h.rec.take()
}

// advance moves the clock and steps.
func (h *harness) advance(d time.Duration) []call {
	h.clock.Advance(d)
	return h.step()
}

func (h *harness) death(d pidwatch.Death) []call {
	h.m.death(context.Background(), h.m.byName(d.Key), d)
	h.m.fireDue(context.Background())
	return h.rec.take()
}

func whats(calls []call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.what+" "+c.key)
	}
	return out
}

func running() *string { s := "running"; return &s }

// session is an open local session with a verified process, started at t0.
func session(id string, pid int) store.Entity {
	return store.Entity{Type: "session", ID: id, Lifecycle: running(), HostID: "h1", PID: pid,
		PIDStartTime: t0, PIDStartTicks: 1000, BootID: "b1", StartedAt: t0, CreatedAt: t0, LifecycleAt: t0,
		Health: state.HealthRunning}
}
