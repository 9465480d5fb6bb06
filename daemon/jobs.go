package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"watchdog/internal/cronspec"
	"watchdog/internal/deadline"
	"watchdog/reaper"
)

// jobTable is the daemon's jobs in reaper.JobNames order (the sweep first:
// awaitFirstSweep runs it).
func (d *daemon) jobTable() []Job {
	j := d.cfg.Jobs
	return []Job{
		{Name: reaper.JobSweep, Spec: j.Sweep, Run: d.unlessPaused(d.sweep), After: d.afterSweep},
		{Name: reaper.JobEnforceTerminal, Spec: j.EnforceTerminal, Run: d.unlessPaused(d.report(d.rp.EnforceTerminal))},
		{Name: reaper.JobReapPhantoms, Spec: j.ReapPhantoms, Run: d.unlessPaused(d.report(d.rp.ReapPhantoms))},
		{Name: reaper.JobCheckSchedules, Spec: j.CheckSchedules, Run: d.unlessPaused(d.report(d.rp.CheckSchedules))},
		{Name: reaper.JobVacuum, Spec: j.Vacuum, Run: d.unlessPaused(d.leading(d.vacuum))},
	}
}

func (d *daemon) schedule(ctx context.Context) error {
	j := d.cfg.Jobs
	d.table = d.jobTable()
	sched, err := NewScheduler(ctx, cronspec.Parser, d.table, d.log.Named("jobs"), d.metrics)
	if err != nil {
		return err
	}
	d.sched = sched
	gap := specInterval(j.Sweep)
	d.mu.Lock()
	d.sweepGap = gap
	d.mu.Unlock()
	return nil
}

func (d *daemon) sweep(ctx context.Context) error {
	d.mu.Lock()
	d.sweepStart = time.Now()
	d.mu.Unlock()
	rep, err := d.rp.Sweep(ctx)
	d.mu.Lock()
	d.sweepStart = time.Time{}
	d.sweepErr = err
	if err == nil {
		d.lastSweep = time.Now()
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if rep.Written > 0 {
		d.log.Debug("sweep", zap.Int("checked", rep.Checked), zap.Int("written", rep.Written))
	}
	return nil
}

func (d *daemon) report(job func(context.Context) (reaper.Report, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		rep, err := job(ctx)
		for _, a := range rep.Actions {
			if rep.DryRun {
				d.log.Info("dry run: would transition", zap.String("job", rep.Job), zap.String("action", a.String()))
			}
		}
		if rep.Truncated {
			d.log.Warn("run stopped at reaper.max_per_run; the next run continues", zap.String("job", rep.Job), zap.Int("max_per_run", d.rp.Settings.MaxPerRun))
		}
		return err
	}
}

// vacuum drops dead dismissals and triage rows past triage_retention.
// d.cfg is safe to read: a reload swaps it only while jobs are stopped.
func (d *daemon) vacuum(ctx context.Context) error {
	now := time.Now()
	n, err := d.st.VacuumDismissals(ctx, now)
	if err != nil {
		return err
	}
	retention := time.Duration(d.cfg.Thresholds.TriageRetention)
	logged, err := d.st.VacuumTriage(ctx, now.Add(-retention))
	if err != nil {
		return err
	}
	d.log.Info("vacuum", zap.Int("dismissals_dropped", n), zap.Int("triage_rows_dropped", logged), zap.Duration("triage_retention", retention))
	return nil
}

// unlessPaused skips a job while background writes are paused; the run
// counts as skipped.
func (d *daemon) unlessPaused(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if d.paused() {
			d.skipped.Add(1)
			return errSkipped
		}
		return run(ctx)
	}
}

// How the first sweep is retried before READY: doubling from first to max.
var (
	firstSweepRetry    = time.Second
	firstSweepRetryMax = 30 * time.Second
)

// awaitFirstSweep runs the first sweep until one works through the store,
// saying in STATUS= why READY waits; false when ctx ends first.
func (d *daemon) awaitFirstSweep(ctx context.Context) bool {
	wait := firstSweepRetry
	retry := deadline.Shared().Signal()
	defer retry.Stop()
	for {
		d.sched.RunNow(d.table[0])
		d.mu.Lock()
		ok, err := d.swept, d.sweepErr
		d.mu.Unlock()
		if ok {
			return true
		}
		if err == nil && d.paused() {
			d.mu.Lock()
			if d.storeErr != nil {
				err = fmt.Errorf("the store cannot take writes, so the daemon's background writes are paused: %w", d.storeErr)
			}
			d.mu.Unlock()
		}
		if err == nil {
			err = errors.New("it did not finish (see the log)")
		}
		d.notify.status(fmt.Sprintf("starting: the first sweep failed, retrying in %s: %s", wait, oneLine(err.Error())))
		d.log.Warn("first sweep failed; READY waits for one that succeeds", zap.Error(err), zap.Duration("retry_in", wait))
		retry.Set(wait)
		select {
		case <-ctx.Done():
			return false
		case <-retry.C:
		}
		wait = min(2*wait, firstSweepRetryMax)
	}
}
