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

// check runs Observe now; a failure is retried at the next poll.
func (m *Monitor) check(ctx context.Context, tr *tracked) {
	tr.checkAt = 0
	defer func() {
		if r := tr.r(); r.diedPID != 0 && r.diedPID == tr.f.pid && r.deadSince == 0 {
			// The death this check recorded, until Update brings the stored value.
			tr.w().deadSince, tr.localDead = r.diedAt, true
		}
	}()
	if _, err := m.guard("check", tr, func() (bool, error) { return m.step(ctx, tr, m.opt.Reaper.Observe) }); err != nil {
		m.warn("check failed; retrying", tr, err)
		tr.checkAt = stampOf(m.opt.Now().Add(m.s.PollInterval))
	}
}

// fireDue runs every deadline that has come and schedules each entity's next.
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
		// The file's mtime may have moved every threshold later.
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
			// Polled for want of an fd: offer it to the watcher again, keeping a
			// failed check's retry.
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
	// Phantom before enforcement: when both are due, "a phantom" is the more
	// specific verdict; the compare-and-set makes the second a no-op.
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

// freshFile stats tr's heartbeat file with its owner's rights and says
// whether a newer mtime makes an idle or stalled verdict worth rejudging.
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

// act runs one of the reaper's acting steps; not retried: the sweep
// reconciles what an error left.
func (m *Monitor) act(ctx context.Context, tr *tracked, what string, f stepFunc) {
	if _, err := m.guard(what, tr, func() (bool, error) { return m.step(ctx, tr, f) }); err != nil {
		m.warn(what+" failed", tr, err)
	}
}

type stepFunc func(context.Context, store.Entity, judge.Event) (bool, error)

func noEvent(f func(context.Context, store.Entity) (bool, error)) stepFunc {
	return func(ctx context.Context, e store.Entity, _ judge.Event) (bool, error) { return f(ctx, e) }
}

// step runs one reaper step on tr's entity whole, with the death it saw
// laid over it until the store brings it back; an entity gone is skipped.
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

// warn logs a step's failure; one the store could not take is debug only,
// as the store watch logs that once for all.
func (m *Monitor) warn(msg string, tr *tracked, err error) {
	if store.Classify(err) == store.FailureNotWritten {
		m.opt.Logger.Debug(msg+" (the store cannot take writes now)", zap.String("entity", tr.name()), zap.Error(err))
		return
	}
	m.opt.Logger.Warn(msg, zap.String("entity", tr.name()), zap.Error(err))
}

// guard turns a panic in a reaper step into an error: one bad row must not
// stop the monitor nor crash the daemon into a restart that adopts it again.
func (m *Monitor) guard(what string, tr *tracked, f func() (bool, error)) (ok bool, err error) {
	defer m.busy()()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s %s: panic: %v", what, tr.name(), p)
		}
	}()
	return f()
}

// busy marks the start of a call that may block; Stuck reads the mark.
func (m *Monitor) busy() (done func()) {
	m.busySince.Store(m.opt.Now().UnixNano())
	return func() { m.busySince.Store(0) }
}

// Stuck is how long the monitor's current step has been running, 0 when
// idle. One goroutine runs every step, so a hung one holds back every
// death and deadline: the daemon stops feeding systemd's watchdog then.
func (m *Monitor) Stuck(now time.Time) time.Duration {
	since := m.busySince.Load()
	if since == 0 {
		return 0
	}
	return now.Sub(time.Unix(0, since))
}
