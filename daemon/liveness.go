package daemon

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"watchdog/config"
	"watchdog/live"
	"watchdog/metrics"
	"watchdog/monitor"
	"watchdog/pidwatch"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/reaper"
	"watchdog/store"
)

// liveness is the event-driven half of the daemon: the pidfd watcher and
// the monitor, fed by the live view's changes (every writer's).
type liveness struct {
	mon     *monitor.Monitor
	watcher *pidwatch.Watcher // nil: pidfds unavailable, every process polled
	// tree keeps watched roots' descendants and exits (ADR-0043); nil if unavailable.
	tree *proctree.Tree
}

// newLiveness builds the monitor and hooks it to the view. It must run
// before the view loads, so the load's entities reach the monitor too.
func newLiveness(view *live.View, rp *reaper.Reaper, host *probe.Host, st store.Backend, m *metrics.Metrics, s reaper.Settings, fds fdBudget, treeMode string, log *zap.Logger) *liveness {
	l := &liveness{}
	w, err := pidwatch.New()
	switch {
	case err == nil:
		l.watcher = w
		l.budget(fds, log)
	case errors.Is(err, pidwatch.ErrUnsupported):
		log.Warn("pidfds are not available here: every watched process is polled (watchdog_watched_processes{mode=\"poll\"})", zap.Error(err))
	default:
		log.Warn("pidfd watcher failed to start: every watched process is polled", zap.Error(err))
	}
	opt := monitor.Options{
		Reaper: rp, Prober: host, HostID: host.HostID(),
		Settings: monitorSettings(s), Logger: log,
	}
	if l.watcher != nil {
		// A nil *Watcher in the interface would not read as "none".
		opt.Watcher = l.watcher
	}
	if l.tree = openTree(treeMode, log); l.tree != nil {
		opt.Tree, rp.Trees = l.tree, l.tree
		m.ProcessTree(metrics.TreeSource{
			Mode: func() string { return string(l.tree.Mode()) }, Overflows: l.tree.Overflows, Lost: l.tree.Lost,
		})
	} else if treeMode == config.ProcessTreeOff {
		none := func() uint64 { return 0 }
		m.ProcessTree(metrics.TreeSource{Mode: func() string { return config.ProcessTreeOff }, Overflows: none, Lost: none})
	}
	// The monitor reads entities whole from the view, which holds each once
	// (ADR-0042).
	opt.Entity = view.Entity
	l.mon = monitor.New(opt)
	view.OnChange(func(prev, cur *store.Entity) {
		if cur == nil {
			if prev != nil {
				l.mon.Forget(prev.Type, prev.ID)
			}
			return
		}
		l.mon.UpdateShared(cur) // the change's own copy: the monitor keeps none of it
	})
	if w := l.watcher; w != nil {
		rp.Watched = func(e *store.Entity) bool { return w.Alive(monitor.Key(e.Type, e.ID), e.PID) }
	}
	rp.WatchedFile = l.mon.HeartbeatFileAt
	m.Watching(l.mon.Watching)
	m.Judging(rp.Counts)
	m.HeartbeatFiles(l.mon.HeartbeatFiles)
	m.HeartbeatFileStatsSkipped(l.mon.HeartbeatFileStatsSkipped)
	if w := l.watcher; w != nil {
		m.PidwatchOverflows(w.Overflows)
	}
	return l
}

// openTree opens the process tree as process_tree says (ADR-0045): events
// (connector, else walks, said at start), walk, or off (nil).
func openTree(mode string, log *zap.Logger) *proctree.Tree {
	if mode == config.ProcessTreeOff {
		log.Info("process_tree: off: no process's descendants are kept; leftovers are found only under a root still alive at a look, by one /proc walk (watchdog_process_tree_mode{mode=\"off\"})")
		return nil
	}
	t, err := proctree.New(proctree.Options{Walk: mode == config.ProcessTreeWalk})
	if err != nil {
		log.Warn("process tree failed to start: no process's descendants are kept; one-shot walks from live roots remain", zap.Error(err))
		return nil
	}
	switch {
	case mode == config.ProcessTreeWalk:
		log.Info("process_tree: walk: descendants are found by /proc walks at the sweep and at each death, so one reparented between two walks is missed (watchdog_process_tree_mode{mode=\"walk\"})")
	case t.Mode() == proctree.ModeWalk:
		log.Warn("the process connector is not available here: descendants are found by /proc walks at the sweep and at each death, so one reparented between two walks is missed (watchdog_process_tree_mode{mode=\"walk\"})", zap.Error(t.Why()))
	case t.Filter() != nil:
		log.Warn("process tree by the kernel's process connector, but unfiltered: every fork and exit on the host reaches the daemon (about a tenth of a core under a fork storm of 6,000 a second); process_tree: walk avoids it (watchdog_process_tree_mode{mode=\"events\"})", zap.Error(t.Filter()))
	default:
		log.Info("process tree by the kernel's process connector, filtered in the kernel to the watched processes (watchdog_process_tree_mode{mode=\"events\"})")
	}
	return t
}

// budget caps the watcher's pidfds at what the fd limit leaves after the
// daemon's reserves (ADR-0037), and logs the shares.
func (l *liveness) budget(b fdBudget, log *zap.Logger) {
	if b.Limit == 0 {
		return // the limit could not be read (said at start): not capped
	}
	if b.Pidfds < 1 {
		log.Warn("the fd limit leaves no room for pidfds after the daemon's reserves: every watched process is polled; raise LimitNOFILE",
			zap.Int("fd_limit", b.Limit), zap.Int("reserved_own", b.Own), zap.Int("reserved_connections", b.Conns))
		l.watcher.Close() //nolint:errcheck // nothing watched yet
		l.watcher = nil
		return
	}
	l.watcher.SetMax(b.Pidfds)
	log.Info("file descriptor budget", zap.Int("fd_limit", b.Limit), zap.Int("reserved_own", b.Own),
		zap.Int("reserved_connections", b.Conns), zap.Int("pidfd_cap", b.Pidfds))
}

// run runs the monitor until stop, which waits for it and closes every
// pidfd.
func (l *liveness) run(log *zap.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l.mon.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("monitor stopped", zap.Error(err))
		}
	})
	return func() {
		cancel()
		wg.Wait()
		if l.watcher != nil {
			l.watcher.Close() //nolint:errcheck // closing fds at shutdown
		}
		if l.tree != nil {
			l.tree.Close() //nolint:errcheck // closing the connector at shutdown
		}
	}
}

// setSettings swaps the reaper's settings (between two monitor steps) and
// applies them to the monitor's deadlines; l may be nil (tests).
func (l *liveness) setSettings(rp *reaper.Reaper, s reaper.Settings) {
	rp.SetSettings(s)
	if l != nil {
		l.mon.SetSettings(monitorSettings(s))
	}
}

// monitorSettings are the reaper's thresholds, so a deadline comes exactly
// when the job would judge.
func monitorSettings(s reaper.Settings) monitor.Settings {
	return monitor.Settings{Settings: s.Settings, PollInterval: monitor.DefaultSettings.PollInterval}
}
