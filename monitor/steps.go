package monitor

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"watchdog/judge"
	"watchdog/state"
	"watchdog/store"
)

// check runs CheckEntity now; a failure is retried at the next poll.
func (m *Monitor) check(ctx context.Context, tr *tracked) {
	tr.checkAt = 0
	if tr.rare != nil {
		tr.rare.awaitExit = false
	}
	defer func() {
		if r := tr.r(); r.diedPID != 0 && r.diedPID == tr.f.pid && r.deadSince == 0 {
			// The death this check recorded, until the change comes back
			// through Update with the stored value.
			tr.w().deadSince, tr.localDead = r.diedAt, true
		}
	}()
	if _, err := m.guard("check", tr, func() (bool, error) { return m.step(ctx, tr, m.opt.Reaper.Observe) }); err != nil {
		m.warn("check failed; retrying", tr, err)
		tr.checkAt = stampOf(m.opt.Now().Add(m.s.PollInterval))
	}
}

// fireDue runs every deadline that has come, each entity's due jobs in one
// go, and schedules its next.
func (m *Monitor) fireDue(ctx context.Context) {
	for {
		tr := m.h.peek()
		now := m.opt.Now()
		if tr == nil || tr.at.time().After(now) || ctx.Err() != nil {
			return
		}
		m.fire(ctx, tr, now)
		if m.ents.get(tr.key()) == tr {
			m.reschedule(tr)
		}
	}
}

func (m *Monitor) fire(ctx context.Context, tr *tracked, now time.Time) {
	_, due := deadlines(tr, m.opt.HostID, m.s, now)
	e := tr.entity(m.opt.HostID)
	if due&jobHeartbeat != 0 {
		// The file's mtime is learned now, when it matters: it may have
		// moved every threshold later.
		if m.freshFile(tr, &e) {
			due |= jobCheck
		}
		if crossed(tr, &e, m.s, now) {
			due |= jobCheck
		}
		tr.judged = stampOf(now)
	}
	if due&jobCheck != 0 {
		m.check(ctx, tr)
		if tr.mode == polled && tr.rewatch && m.ents.get(tr.key()) == tr {
			// Polled for want of an fd: offered to the watcher again
			// (a refusal at the cap costs no syscall). A death the check
			// just recorded comes back through Update, which unwatches.
			// A failed check's retry (checkAt) outlives a watch won.
			retry := tr.checkAt
			m.unwatch(tr)
			m.watch(ctx, tr, now)
			if tr.mode == byPidfd {
				tr.checkAt = retry
			}
		}
		if tr.mode == polled && tr.checkAt == 0 {
			tr.checkAt = stampOf(now.Add(m.s.PollInterval))
		}
	}
	// Phantom before enforcement: when both are due at once (a process
	// quiet for phantom_after that died terminal_grace ago), "a phantom"
	// is the more specific verdict; the compare-and-set makes the second
	// a no-op. With the defaults (grace 30s, phantom 1h) enforcement
	// nearly always comes first on its own.
	if due&jobPhantom != 0 {
		tr.w().phantomFor = stampOf(judge.LastActivity(&e, tr.r().hbFile.time()))
		m.act(ctx, tr, "reap phantom", noEvent(m.opt.Reaper.ReapPhantomEntity))
	}
	if due&jobEnforce != 0 {
		tr.w().enforcedFor = stampOf(e.DeadSince)
		m.act(ctx, tr, "enforce", m.opt.Reaper.EnforceEntity)
	}
	if due&jobSchedule != 0 {
		tr.w().scheduleFor = stampOf(judge.NextFire(&e))
		m.act(ctx, tr, "check schedule", noEvent(m.opt.Reaper.CheckScheduleEntity))
	}
}

// freshFile stats tr's heartbeat file (with its owner's rights) and
// says whether a newer mtime makes an idle or stalled verdict worth
// judging again now.
func (m *Monitor) freshFile(tr *tracked, e *store.Entity) bool {
	if e.HeartbeatFile == "" {
		return false
	}
	done := m.busy()
	if m.opt.Entity != nil {
		if full, ok := m.opt.Entity(e.Type, e.ID); ok {
			e.OwnerUID, e.HasOwnerUID = full.OwnerUID, full.HasOwnerUID
		}
	}
	mt, err := m.opt.StatMtime(e)
	done()
	if err != nil || !mt.After(tr.r().hbFile.time()) {
		return false
	}
	tr.w().hbFile = stampOf(mt)
	return e.Health == state.HealthIdle || e.Health == state.HealthStalled
}

// act runs one of the reaper's acting entry points. It is not retried on
// its own: the sweep reconciles what an error left.
func (m *Monitor) act(ctx context.Context, tr *tracked, what string, f stepFunc) {
	if _, err := m.guard(what, tr, func() (bool, error) { return m.step(ctx, tr, f) }); err != nil {
		m.warn(what+" failed", tr, err)
	}
}

// stepFunc is a reaper step, with what the monitor knows of the event.
type stepFunc func(context.Context, store.Entity, judge.Event) (bool, error)

// noEvent is a step that takes no event.
func noEvent(f func(context.Context, store.Entity) (bool, error)) stepFunc {
	return func(ctx context.Context, e store.Entity, _ judge.Event) (bool, error) { return f(ctx, e) }
}

// step runs one reaper step on tr's entity whole: the one kept (whole),
// else the one read from Options.Entity, with the death it saw (event)
// and its dead_since laid over it while the store has not brought it
// back (not over another process's). An entity no longer there (its
// deletion on its way here) is skipped.
func (m *Monitor) step(ctx context.Context, tr *tracked, f stepFunc) (bool, error) {
	var e store.Entity
	switch {
	case tr.r().whole != nil:
		e = *tr.rare.whole
	case m.opt.Entity != nil:
		var ok bool
		if e, ok = m.opt.Entity(tr.f.typ(), tr.f.id); !ok {
			return false, nil
		}
	default:
		return false, nil
	}
	if tr.localDead && e.DeadSince.IsZero() && !otherProcess(&tr.f, &e) {
		e.DeadSince = tr.r().deadSince.time()
	}
	return f(ctx, e, m.event(tr, &e))
}

// warn logs a step's failure: a warning, except when the store could not
// take the write (store.FailureNotWritten: a lost store, a full or
// read-only disk, a server gone), which the daemon's store watch logs once
// for all; per entity and per retry it would bury that line. The step is
// retried (a check) or reconciled by the sweep (an act) all the same.
func (m *Monitor) warn(msg string, tr *tracked, err error) {
	if store.Classify(err) == store.FailureNotWritten {
		m.opt.Logger.Debug(msg+" (the store cannot take writes now)", zap.String("entity", tr.name()), zap.Error(err))
		return
	}
	m.opt.Logger.Warn(msg, zap.String("entity", tr.name()), zap.Error(err))
}

// guard runs one reaper step and turns a panic in it into an error: one
// entity's bad row must not stop the monitor (every death and deadline
// of the host) nor crash the daemon into a restart that adopts it again.
func (m *Monitor) guard(what string, tr *tracked, f func() (bool, error)) (ok bool, err error) {
	defer m.busy()()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s %s: panic: %v", what, tr.name(), p)
		}
	}()
	return f()
}

// busy marks the start of a call that may block (a reaper step, a
// heartbeat file's stat) and returns its end: Stuck reads the mark.
func (m *Monitor) busy() (done func()) {
	m.busySince.Store(m.opt.Now().UnixNano())
	return func() { m.busySince.Store(0) }
}

// Stuck is how long the monitor's current step has been running at now,
// 0 when it is waiting for its next death or deadline. One goroutine runs
// every step, so a step that never returns (a stat on a hung NFS mount,
// a store that never answers) holds back every death and deadline of the
// host: the daemon stops feeding systemd's watchdog when this grows past
// any step's own bounds.
func (m *Monitor) Stuck(now time.Time) time.Duration {
	since := m.busySince.Load()
	if since == 0 {
		return 0
	}
	return now.Sub(time.Unix(0, since))
}
