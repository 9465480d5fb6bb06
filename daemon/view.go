package daemon

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"watchdog/internal/deadline"
	"watchdog/live"
	"watchdog/metrics"
	"watchdog/state"
	"watchdog/store"
)

// runView loads the live view (before the API serves or READY is sent, so
// the first answer already counts every entity), points the metric
// counters at its feed, and syncs it in the background so push consumers
// hear of changes without a reader. The returned stop ends the loop and
// waits for it.
func runView(ctx context.Context, v *live.View, wake <-chan struct{}, m *metrics.Metrics, log *zap.Logger) (stop func()) {
	// The counters follow from the feed's head on: Follow before Load, so
	// no row written meanwhile is missed.
	m.Follow(v)
	// Changes into critical or warning are logged from the first change
	// after the load; the load itself is one summary line.
	sev := &severityLog{log: log, now: time.Now}
	v.OnChange(sev.change)
	// A store that cannot be read yet (the first sweep's retries say why,
	// and hold READY back) is not fatal here: every Sync retries the load.
	start := time.Now()
	loaded := false
	if err := v.Load(ctx); err != nil {
		log.Warn("live view not loaded yet; retrying", zap.Error(err))
	} else {
		log.Info("live view loaded", zap.Int("held", v.Len()), zap.Int("entities", v.Counts(time.Now()).Entities), zap.Duration("took", time.Since(start)))
		sev.loaded(v.Counts(time.Now()))
		loaded = true
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var lastLogged time.Time
	wg.Go(func() {
		if !loaded {
			// The first Sync that succeeds is the load: its entities
			// are the summary, not one warning each.
			retry := deadline.Shared().Signal()
			defer retry.Stop()
			for !loaded {
				retry.Set(live.DefaultPeriod)
				select {
				case <-runCtx.Done():
					return
				case <-retry.C:
				}
				if err := v.Sync(runCtx); err != nil {
					if time.Since(lastLogged) >= time.Minute {
						lastLogged = time.Now()
						log.Warn("live view sync failed", zap.Error(err))
					}
					continue
				}
				log.Info("live view loaded", zap.Int("held", v.Len()), zap.Int("entities", v.Counts(time.Now()).Entities), zap.Duration("took", time.Since(start)))
				sev.loaded(v.Counts(time.Now()))
				loaded = true
			}
		}
		// Rows whose derived columns are stale (all of them after the
		// upgrade that added the columns) are derived once, beside the
		// sync, so no fleet-wide read pays for them (ADR-0058).
		wg.Go(func() {
			start := time.Now()
			if n, err := v.FillColumns(runCtx); err != nil {
				if runCtx.Err() == nil {
					log.Warn("derived columns not filled; the fleet-wide reads fill them as they go", zap.Int("filled", n), zap.Error(err))
				}
			} else if n > 0 {
				log.Info("derived columns filled", zap.Int("rows", n), zap.Duration("took", time.Since(start)))
			}
		})
		// The store tells its commits (inotify on SQLite's file and WAL,
		// LISTEN/NOTIFY on PostgreSQL): the view syncs on them, with a
		// slow tick as the net; without events it polls as before.
		every := live.DefaultPeriod
		if wake != nil {
			every = live.QuietPeriod
		}
		v.RunOn(runCtx, wake, every, func(err error) {
			// A store that cannot be read says so once a minute, not
			// ten times a second; /readyz and STATUS= carry the rest.
			if time.Since(lastLogged) >= time.Minute {
				lastLogged = time.Now()
				log.Warn("live view sync failed", zap.Error(err))
			}
		})
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// statusLine is systemd's STATUS=: the open entities by severity, how many
// ended within the failure window, and the queue's items, by the
// definitions of package live that `watchdog status`, the metrics and GET
// /api/attention share. It reads the live view after a Sync: what the
// daemon holds, every entity for a daemon alone, its own share in a fleet
// (ADR-0056; the fleet's whole is the API's, read from the store).
//
// While the store fails (the store watch's checks, or the view's
// Sync) it says so first, since when and why, then the last counts read:
// counts alone would read as a healthy daemon whose numbers merely stopped
// moving. Once the store works again it is the counts alone.
func (d *daemon) statusLine() string {
	d.mu.Lock()
	failure := d.storeErr
	d.mu.Unlock()
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var counts *live.Counts
	if err := d.view.Sync(ctx); err != nil {
		if failure == nil {
			failure = err
		}
	} else {
		c := d.view.Counts(now)
		counts = &c
	}
	return d.status.line(now, failure, counts)
}

// statusMemory is what STATUS= keeps between refreshes: since when the
// store fails, and the last counts read. Its methods are safe for
// concurrent use.
type statusMemory struct {
	mu           sync.Mutex
	failingSince time.Time
	last         string // StatusLine of the last counts read; "" before any
}

// storeChecked records a finding of the store watch, so the failure's
// start is the probe's time, not the next STATUS= refresh's.
func (m *statusMemory) storeChecked(err error, at time.Time) {
	if err == nil {
		return
	}
	m.mu.Lock()
	if m.failingSince.IsZero() {
		m.failingSince = at
	}
	m.mu.Unlock()
}

// line is STATUS= at now given the store's failure (nil: it works) and the
// counts just read (nil: none could be).
func (m *statusMemory) line(now time.Time, failure error, counts *live.Counts) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if counts != nil {
		m.last = StatusLine(*counts)
	}
	if failure == nil {
		m.failingSince = time.Time{}
		return m.last
	}
	if m.failingSince.IsZero() {
		m.failingSince = now
	}
	last := m.last
	if last == "" {
		last = "none read yet"
	}
	return fmt.Sprintf("store failing since %s: %s; last counts: %s", clockTime(m.failingSince, now), oneLine(failure.Error()), last)
}

// clockTime is t in UTC as STATUS= shows a moment: the time of day when it
// is today's (UTC), the date too when it is not.
func clockTime(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04:05Z")
	}
	return t.Format("2006-01-02 15:04:05Z")
}

// StatusLine renders counts as STATUS= shows them.
func StatusLine(c live.Counts) string {
	return fmt.Sprintf("%d open entities: %d critical, %d warning, %d info; %d ended within the failure window; %d queue items (%d critical, %d warning, %d info)",
		c.Open, c.OpenBySeverity[state.SeverityCritical], c.OpenBySeverity[state.SeverityWarning], c.OpenBySeverity[state.SeverityInfo],
		c.InWindow, c.Queue, c.QueueBySeverity[state.SeverityCritical], c.QueueBySeverity[state.SeverityWarning], c.QueueBySeverity[state.SeverityInfo])
}

// severityLog logs each change of an entity's derived severity into
// critical or warning (from anything else, or from critical to warning)
// once, at warning level, with the entity, its display chain and the
// reason: what `journalctl -p warning` shows an operator. An entity that
// stays critical or warning is not logged again. The entities of the
// initial load are one summary line instead (loaded).
type severityLog struct {
	log *zap.Logger
	now func() time.Time
	// live is set once the initial load was summarised; until then
	// changes are the load's and are not logged one by one. Only the
	// syncing goroutine calls change, but loaded may run on another.
	live atomic.Bool
}

// change is the live view's OnChange hook: it derives both sides.
func (l *severityLog) change(prev, cur *store.Entity) {
	if !l.live.Load() || cur == nil {
		return
	}
	now := l.now()
	d := live.Derive(*cur, now)
	if d.State.Legacy() || (d.State.Severity != state.SeverityCritical && d.State.Severity != state.SeverityWarning) {
		return
	}
	from := state.Severity("")
	if prev != nil {
		p := live.Derive(*prev, now)
		if !p.State.Legacy() {
			from = p.State.Severity
		}
	}
	if from == d.State.Severity {
		return
	}
	fields := []zap.Field{
		zap.String("entity_type", cur.Type), zap.String("entity_id", cur.ID),
		zap.String("severity", string(d.State.Severity)), zap.String("previous_severity", string(from)),
		zap.String("chain", d.Display),
	}
	if code, msg, ok := explain(d, now); ok {
		fields = append(fields, zap.String("reason_code", string(code)), zap.String("reason", msg))
	}
	l.log.Warn("entity is now "+string(d.State.Severity), fields...)
}

// explain is the reason an entity's severity is shown with: its first
// attention item's (the queue's cause), else its first reason.
func explain(d live.Derived, now time.Time) (state.ReasonCode, string, bool) {
	if len(d.Items) > 0 {
		it := d.Items[0].At(now)
		return it.Reason.Code, it.Reason.Summary, true
	}
	if len(d.State.Reasons) > 0 {
		r := d.State.Reasons[0]
		return r.Code, state.Render(r, now), true
	}
	return "", "", false
}

// loaded ends the initial load: one warning line with the counts of what
// needs attention, if anything does, then every later change is logged.
func (l *severityLog) loaded(c live.Counts) {
	crit, warn := c.OpenBySeverity[state.SeverityCritical], c.OpenBySeverity[state.SeverityWarning]
	qc, qw := c.QueueBySeverity[state.SeverityCritical], c.QueueBySeverity[state.SeverityWarning]
	if crit+warn+qc+qw > 0 {
		l.log.Warn("entities need attention at start-up",
			zap.Int("open_critical", crit), zap.Int("open_warning", warn),
			zap.Int("queue_critical", qc), zap.Int("queue_warning", qw))
	}
	l.live.Store(true)
}

// changesOf is the store's change signal, nil when it has none.
func changesOf(st any) <-chan struct{} {
	if c, ok := st.(interface{ Changes() <-chan struct{} }); ok {
		return c.Changes()
	}
	return nil
}

// followCommits is where the store's commit events go: the view (changes),
// the pusher (pushPoke: a snooze or a dismissal changes the queue without
// an entity change) and, on SQLite, the fleet: a daemon alone with its
// file looks at the lock table on them. Both are nil for a store that
// tells no commits; stop ends the fan-out.
func followCommits(st store.Backend, fl *fleet) (changes <-chan struct{}, pushPoke chan struct{}, stop func()) {
	changes = changesOf(st)
	if changes == nil {
		return nil, nil, func() {}
	}
	if lt, ok := st.(lockTable); ok {
		if _, err := lt.HostLocks(); err == nil {
			fl.locks = lt.HostLocks
		}
	}
	pushPoke = make(chan struct{}, 1)
	changes, stop = tee(changes, fl.poke, pushPoke)
	return changes, pushPoke, stop
}

// tee passes every signal of in on to the returned channel and to each
// of also, every one a one-slot signal that never blocks the sender,
// until stop.
func tee(in <-chan struct{}, also ...chan<- struct{}) (out <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	outs := append([]chan<- struct{}{ch}, also...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-in:
			}
			for _, c := range outs {
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	})
	return ch, func() {
		close(done)
		wg.Wait()
	}
}
