package monitor

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"watchdog/judge"
	"watchdog/pidwatch"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
)

// exitWait is how long a pidfd death without exit status waits for the
// connector's, so the death is written once, with it (ADR-0065).
const exitWait = 50 * time.Millisecond

// death handles a death the kernel reported (pidfd or connector): one
// judgement per death, exit status included (ADR-0065). The same death
// told again brings nothing, unless it brings the status first.
func (m *Monitor) death(ctx context.Context, tr *tracked, d pidwatch.Death) {
	pid := pid32(d.PID)
	if tr == nil || tr.f.pid != pid {
		return // forgotten, or re-registered to another process meanwhile
	}
	news := false
	if d.Exit.Known && tr.r().exitPID != pid {
		tr.w().exitPID = pid
		x := state.ExitStatus{Code: d.Exit.Code, Signal: int(d.Exit.Signal), At: d.At}
		if d.Exit.Signal != 0 {
			x.Code = 0
		}
		tr.w().heard, news = &x, true
	}
	if tr.r().diedPID == pid {
		if news {
			// The status after the death: now if the death awaited it, else a second write.
			m.check(ctx, tr)
			m.reschedule(tr)
		}
		return
	}
	// Not Forget: pidwatch ends the watch itself after the last Death.
	r := tr.w()
	r.diedPID, r.diedAt = pid, stampOf(d.At)
	if tr.mode == byPidfd {
		m.setMode(tr, unwatched)
		tr.watchedPID = 0
	}
	if t := m.opt.Tree; t != nil && t.Mode() == proctree.ModeWalk && tr.r().treeRoot.PID != 0 {
		// Walk mode: a walk now keeps what the root left (ADR-0043).
		done := m.busy()
		if err := t.Refresh(); err != nil {
			m.warn("cannot walk /proc for the process trees", tr, err)
		}
		done()
	}
	if !news && tr.r().treeRoot.PID != 0 && m.opt.Tree.Mode() == proctree.ModeEvents {
		// The connector has the status at exit, the pidfd only once reaped.
		tr.checkAt = stampOf(m.opt.Now().Add(exitWait))
		m.reschedule(tr)
		return
	}
	m.check(ctx, tr)
	m.reschedule(tr)
}

// event is what the monitor knows of tr's process for a step on e: the
// death and its exit status while the store does not hold it.
func (m *Monitor) event(tr *tracked, e *store.Entity) judge.Event {
	r := tr.r()
	if r.diedPID == 0 || r.diedPID != tr.f.pid || otherProcess(&tr.f, e) {
		return judge.Event{}
	}
	ev := judge.Event{Died: true, At: r.diedAt.time()}
	if e.Exit == nil && r.exitPID == r.diedPID {
		ev.Exit = r.heard
	}
	return ev
}

// resync answers the watcher's Resync: which deaths were dropped is not
// known, so every pidfd-watched process is probed now, and a dead one
// handled as its Death would have been (without exit status). Its pidfd
// turned readable before the drop, so no dropped death is missed.
func (m *Monitor) resync(ctx context.Context) {
	now := m.opt.Now()
	var dead, unread, watched int
	for tr := range m.ents.all() {
		if tr.mode != byPidfd {
			continue
		}
		watched++
		e := tr.entity(m.opt.HostID)
		done := m.busy()
		seen := m.opt.Prober.CheckPID(judge.PIDSubject(&e))
		done()
		switch seen.Liveness {
		case probe.Dead:
			dead++
			if tr.r().treeRoot.PID != 0 && m.opt.Tree.Mode() == proctree.ModeEvents {
				// The connector may have it with its status: look, don't assume.
				tr.checkAt = stampOf(now)
				m.reschedule(tr)
				continue
			}
			m.death(ctx, tr, pidwatch.Death{Key: tr.name(), PID: e.PID, At: now})
		case probe.Unknown:
			unread++
			tr.checkAt = stampOf(now)
			m.reschedule(tr)
		}
	}
	m.nResyncs.Add(1)
	m.opt.Logger.Warn("the pidfd watcher dropped deaths at its full queue (watchdog_pidwatch_overflow_total): every watched process was looked at again",
		zap.Int("watched", watched), zap.Int("found_dead", dead), zap.Int("unreadable_checked", unread))
}

// treeExit takes a watched root's exit from the process tree and handles
// it as a pidfd death; whichever comes second finds it done.
func (m *Monitor) treeExit(ctx context.Context, x proctree.Exit) {
	tr := m.roots[x.Root]
	if tr == nil || x.PID != x.Root.PID || tr.f.pid != pid32(x.PID) {
		return // a root forgotten since, or a descendant's exit
	}
	m.death(ctx, tr, pidwatch.Death{Key: tr.name(), PID: x.PID, At: x.At, Exit: pidwatch.Exit{Known: true, Code: x.Code, Signal: x.Signal}})
}

func rootOf(f *facts) proctree.Root {
	return proctree.Root{PID: int(f.pid), StartTicks: f.pidStartTicks}
}

// watchTree keeps tr's process in the tree beside its pidfd; a root the
// tree refuses is simply not kept.
func (m *Monitor) watchTree(tr *tracked) {
	t := m.opt.Tree
	if t == nil || tr.r().treeRoot.PID != 0 {
		return
	}
	root := rootOf(&tr.f)
	if m.roots[root] != nil {
		return // two entities of one process: the tree keeps it for the first
	}
	done := m.busy()
	err := t.Watch(root)
	done()
	if err != nil {
		if !errors.Is(err, proctree.ErrGone) && !errors.Is(err, proctree.ErrNotSame) {
			m.opt.Logger.Debug("process tree watch failed", zap.String("entity", tr.name()), zap.Error(err))
		}
		return
	}
	tr.w().treeRoot = root
	m.roots[root] = tr
}

func (m *Monitor) forgetTree(tr *tracked) {
	root := tr.r().treeRoot
	if root.PID == 0 {
		return
	}
	m.opt.Tree.Forget(root)
	if m.roots[root] == tr {
		delete(m.roots, root)
	}
	tr.rare.treeRoot = proctree.Root{}
	tr.tidy()
}
