package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/live"
	"watchdog/metrics"
	"watchdog/state"
)

// runView loads the live view (before the API serves or READY is sent, so
// the first answer already counts every entity), points the metric
// counters at its feed, and syncs it in the background so push consumers
// hear of changes without a reader. The returned stop ends the loop and
// waits for it.
func runView(ctx context.Context, v *live.View, m *metrics.Metrics, log *zap.Logger) (stop func()) {
	// The counters follow from the feed's head on: Follow before Load, so
	// no row written meanwhile is missed.
	m.Follow(v)
	// A store that cannot be read yet (the first sweep's retries say why,
	// and hold READY back) is not fatal here: every Sync retries the load.
	start := time.Now()
	if err := v.Load(ctx); err != nil {
		log.Warn("live view not loaded yet; retrying", zap.Error(err))
	} else {
		log.Info("live view loaded", zap.Int("entities", v.Len()), zap.Duration("took", time.Since(start)))
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var lastLogged time.Time
	wg.Go(func() {
		v.Run(runCtx, live.DefaultPeriod, func(err error) {
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
// /api/attention share. It reads the live view after a Sync.
func (d *daemon) statusLine() string {
	d.mu.Lock()
	storeErr := d.storeErr
	d.mu.Unlock()
	if storeErr != nil {
		return "NOT READY: " + oneLine(storeErr.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := d.view.Sync(ctx); err != nil {
		return "store unreachable: " + oneLine(err.Error())
	}
	return StatusLine(d.view.Counts(time.Now()))
}

// StatusLine renders counts as STATUS= shows them.
func StatusLine(c live.Counts) string {
	return fmt.Sprintf("%d open entities: %d critical, %d warning, %d info; %d ended within the failure window; %d queue items (%d critical, %d warning, %d info)",
		c.Open, c.OpenBySeverity[state.SeverityCritical], c.OpenBySeverity[state.SeverityWarning], c.OpenBySeverity[state.SeverityInfo],
		c.InWindow, c.Queue, c.QueueBySeverity[state.SeverityCritical], c.QueueBySeverity[state.SeverityWarning], c.QueueBySeverity[state.SeverityInfo])
}
