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

// runView loads the live view before the API serves, so the first answer
// counts every entity, and syncs it in the background until stop.
func runView(ctx context.Context, v *live.View, wake <-chan struct{}, m *metrics.Metrics, log *zap.Logger) (stop func()) {
	// Follow before Load, so no row written meanwhile is missed.
	m.Follow(v)
	sev := &severityLog{log: log, now: time.Now}
	v.OnChange(sev.change)
	// A store not readable yet is not fatal: every Sync retries the load.
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
			// The first Sync that succeeds is the load: one summary line.
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
		// Stale derived columns are filled once, beside the sync (ADR-0058).
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
		// Sync on the store's commit events, with a slow tick as the net.
		every := live.DefaultPeriod
		if wake != nil {
			every = live.QuietPeriod
		}
		v.RunOn(runCtx, wake, every, func(err error) {
			// Once a minute: /readyz and STATUS= carry the rest.
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

// statusLine is systemd's STATUS=: the counts of what this daemon's view
// holds (ADR-0056). While the store fails it says so first, since when and
// why: counts alone would read as a healthy daemon.
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

// statusMemory is what STATUS= keeps between refreshes; safe for concurrent use.
type statusMemory struct {
	mu           sync.Mutex
	failingSince time.Time
	last         string // StatusLine of the last counts read; "" before any
}

// storeChecked records a store watch finding: a failure starts then.
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

// line is STATUS= at now given the store's failure (nil: none) and counts (nil: unread).
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

// clockTime is t in UTC, with the date when it is not today's.
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

// severityLog logs once, at warning level, each change of an entity's
// derived severity into critical or warning: what `journalctl -p warning`
// shows an operator. The initial load is one summary line (loaded).
type severityLog struct {
	log *zap.Logger
	now func() time.Time
	// live is set once the load was summarised; loaded may run on another goroutine than change.
	live atomic.Bool
}

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

// explain is the reason shown with a severity: the first item's, else the first reason's.
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

// loaded ends the initial load with one summary line, if anything needs attention.
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

func changesOf(st any) <-chan struct{} {
	if c, ok := st.(interface{ Changes() <-chan struct{} }); ok {
		return c.Changes()
	}
	return nil
}

// followCommits fans the store's commit events out to the view, the pusher
// (a snooze changes the queue without an entity change) and, on SQLite, a
// lone daemon's lock-table look. All nil for a store without events.
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

// tee passes every signal of in on to out and each of also, never blocking.
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
