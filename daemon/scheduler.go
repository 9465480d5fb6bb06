package daemon

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"watchdog/reaper"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
)

// JobObserver hears about every job run (metrics); nil is fine.
type JobObserver interface {
	JobRun(job, result string, d time.Duration)
}

// Job is one scheduled job: a name (a label value), a cron spec and its
// body.
type Job struct {
	Name string
	Spec string
	Run  func(ctx context.Context) error
	// After, when set, runs after every run that worked through its
	// store: a success, or a sweep that ran out of budget (slow is not
	// wedged, and restarting a daemon whose host is too big for one sweep
	// only makes the next sweep start cold). The daemon marks /readyz's
	// sweep and its store presence here; systemd's ping and STATUS= come
	// from its main loop.
	After func()
}

// Scheduler runs jobs on robfig/cron with two guarantees cron's own chain
// wrappers give only in part: an overlapping run is skipped *and counted*,
// and a panic is recovered, logged with its stack and counted as an error.
type Scheduler struct {
	cron     *cron.Cron
	log      *zap.Logger
	observer JobObserver
	ctx      context.Context
	runners  map[string]jobRunner // one per job, shared by cron and RunNow
}

// NewScheduler parses every job's spec with parser and schedules it. Job
// bodies get ctx, which the caller should not cancel before Stop: a job that
// is running at shutdown is let finish.
func NewScheduler(ctx context.Context, parser cron.ScheduleParser, table []Job, log *zap.Logger, observer JobObserver) (*Scheduler, error) {
	s := &Scheduler{cron: cron.New(cron.WithParser(parser)), log: log, observer: observer, ctx: ctx, runners: map[string]jobRunner{}}
	for _, j := range table {
		r := s.wrap(j)
		s.runners[j.Name] = r
		if _, err := s.cron.AddJob(j.Spec, r); err != nil {
			return nil, fmt.Errorf("jobs.%s: %q: %w", j.Name, j.Spec, err)
		}
	}
	return s, nil
}

// Start starts the schedule in the background.
func (s *Scheduler) Start() { s.cron.Start() }

// Stop stops scheduling and waits for running jobs to finish.
func (s *Scheduler) Stop() { <-s.cron.Stop().Done() }

// StopWithin stops scheduling and waits at most d for running jobs to
// finish. It reports false when one is still running (stuck on a hung
// file system, say): the caller decides whether to go on without it, or
// to Start the scheduler again, whose overlap guard keeps skipping the
// stuck job until it returns.
func (s *Scheduler) StopWithin(d time.Duration) bool {
	done := s.cron.Stop().Done()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// RunNow runs one job synchronously through the same wrapper, and the same
// overlap guard, as its scheduled runs (the daemon's first sweep before
// READY). A job the scheduler does not know runs through a wrapper of its
// own.
func (s *Scheduler) RunNow(j Job) {
	if r, ok := s.runners[j.Name]; ok {
		r.Run()
		return
	}
	s.wrap(j).Run()
}

type jobRunner struct {
	s    *Scheduler
	job  Job
	busy *sync.Mutex
}

func (s *Scheduler) wrap(j Job) jobRunner {
	return jobRunner{s: s, job: j, busy: &sync.Mutex{}}
}

// Run executes the job once, unless its previous run is still going.
func (r jobRunner) Run() {
	log := r.s.log.With(zap.String("job", r.job.Name))
	if !r.busy.TryLock() {
		log.Warn("previous run still going, skipping this one")
		r.observe(reaper.ResultSkipped, 0)
		return
	}
	defer r.busy.Unlock()
	start := time.Now()
	result := reaper.ResultOK
	defer func() {
		if p := recover(); p != nil {
			log.Error("job panicked", zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			r.observe(reaper.ResultError, time.Since(start))
		}
	}()
	err := r.job.Run(r.s.ctx)
	switch {
	case errors.Is(err, errSkipped):
		log.Debug("job skipped: the daemon's background writes are paused")
		r.observe(reaper.ResultSkipped, time.Since(start))
		return
	case err == nil:
		log.Debug("job done", zap.Duration("took", time.Since(start)))
	case isOverBudget(err):
		result = reaper.ResultTimeout
		log.Error("job over budget", zap.Error(err))
	default:
		result = reaper.ResultError
		log.Error("job failed", zap.Error(err))
	}
	r.observe(result, time.Since(start))
	if (err == nil || isOverBudget(err)) && r.job.After != nil {
		r.job.After()
	}
}

func (r jobRunner) observe(result string, d time.Duration) {
	if r.s.observer != nil {
		r.s.observer.JobRun(r.job.Name, result, d)
	}
}

// errSkipped is a job's run that did nothing on purpose (the daemon's
// background writes are paused): counted as skipped, logged at debug, and
// not followed by the job's After.
var errSkipped = errors.New("skipped: background writes paused")

func isOverBudget(err error) bool { return errors.Is(err, reaper.ErrSweepOverBudget) }
