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

// exitWait is how long a death the pidfd reported without its exit
// status waits for the process connector's, which has it at the exit:
// the death is then written once, with its status.
const exitWait = 50 * time.Millisecond

// death handles a death the kernel reported (the pidfd, the process
// connector): one judgement per death, with the exit status in it
// (Reaper.Observe records process_dead, dead_since and the status in one
// write); enforcement follows at dead_since + terminal_grace. The same
// death told again (the connector, then the pidfd, then its status once
// reaped) brings nothing more, unless it brings the status first.
// tr is the entity d.Key names (nil: none tracked).
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
		tr.w().exit, news = &x, true
	}
	if tr.r().diedPID == pid {
		if news {
			// The status after the death: now, if the death was waiting
			// for it; else (a pidfd alone, reaped late) a second write.
			m.check(ctx, tr)
		}
		return
	}
	// The watch is over on the monitor's side. Not Forget: pidwatch ends
	// it itself after the last Death.
	tr.w().diedPID, tr.rare.diedAt = pid, stampOf(d.At)
	if tr.mode == byPidfd {
		m.setMode(tr, unwatched)
		tr.watchedPID = 0
	}
	if t := m.opt.Tree; t != nil && t.Mode() == proctree.ModeWalk && tr.r().treeRoot.PID != 0 {
		// The reduced mode follows the processes by walks: this one
		// finds the root gone and keeps what it left (ADR-0043).
		done := m.busy()
		if err := t.Refresh(); err != nil {
			m.warn("cannot walk /proc for the process trees", tr, err)
		}
		done()
	}
	if !news && tr.r().treeRoot.PID != 0 && m.opt.Tree.Mode() == proctree.ModeEvents {
		// The connector has the status at the exit, the pidfd only once
		// reaped: a moment's wait for it.
		tr.rare.awaitExit = true
		tr.checkAt = stampOf(m.opt.Now().Add(exitWait))
		m.reschedule(tr)
		return
	}
	m.check(ctx, tr)
	m.reschedule(tr)
}

// event is what the monitor knows of tr's process for a step on e: the
// death the kernel reported, and its exit status while the store does
// not hold it.
func (m *Monitor) event(tr *tracked, e *store.Entity) judge.Event {
	r := tr.r()
	if r.diedPID == 0 || r.diedPID != tr.f.pid || otherProcess(&tr.f, e) {
		return judge.Event{}
	}
	ev := judge.Event{Died: true, At: r.diedAt.time()}
	if e.Exit == nil && r.exitPID == r.diedPID {
		ev.Exit = r.exit
	}
	return ev
}

// resync answers the watcher's Resync: deaths were dropped at its full
// queue, and which is not known, so every process watched by pidfd is
// looked at now. One whose recorded identity the probe finds dead (gone,
// a zombie, its pid reused) is handled as its Death would have been (the
// check through the reaper, now, and enforcement at dead_since +
// terminal_grace), with no exit status: that was in the Death. Its pidfd
// turned readable before the drop, so no dropped death is missed. One the
// probe cannot read is checked through the reaper, which looks again; a
// live one keeps its watch, at the cost of one /proc read and no write.
// Deaths still queued arrive after, and find the entity judged already.
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
				// The connector may have it with its status: a look,
				// not the kernel's word (its pidfd's news was dropped).
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

// treeExit takes a watched root's exit from the process tree: its status,
// known at the exit whether or not the parent reaps it, is recorded, and
// the death handled as a pidfd's would be (a pidfd death for the same pid
// before or after finds it done, its status not recorded twice).
func (m *Monitor) treeExit(ctx context.Context, x proctree.Exit) {
	tr := m.roots[x.Root]
	if tr == nil || x.PID != x.Root.PID || tr.f.pid != pid32(x.PID) {
		return // a root forgotten since, or a descendant's exit
	}
	m.death(ctx, tr, pidwatch.Death{Key: tr.name(), PID: x.PID, At: x.At, Exit: pidwatch.Exit{Known: true, Code: x.Code, Signal: x.Signal}})
}

// rootOf is the tree root naming f's process.
func rootOf(f *facts) proctree.Root {
	return proctree.Root{PID: int(f.pid), StartTicks: f.pidStartTicks}
}

// watchTree keeps tr's process in the tree beside its pidfd. A root the
// tree refuses (gone since the pidfd opened, another start) is simply
// not kept: the pidfd and the probe say the rest.
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

// forgetTree stops keeping tr's root in the tree.
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
