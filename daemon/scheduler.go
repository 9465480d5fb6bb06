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
	// After, when set, runs after every run that worked through its store,
	// over-budget sweeps included (slow is not wedged). The daemon marks
	// /readyz's sweep here.
	After func()
}

// Scheduler runs jobs on robfig/cron, skipping *and counting* an
// overlapping run, and recovering, logging and counting a panic.
type Scheduler struct {
	cron     *cron.Cron
	log      *zap.Logger
	observer JobObserver
	ctx      context.Context
	runners  map[string]jobRunner // one per job, shared by cron and RunNow
}

// NewScheduler parses every job's spec with parser and schedules it. Job
// bodies get ctx, which should outlive Stop: a running job is let finish.
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

// StopWithin stops scheduling and waits at most d for running jobs. False
// means one is still running (a hung file system, say); a restarted
// scheduler keeps skipping it until it returns.
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

// RunNow runs one job synchronously through the same wrapper and overlap
// guard as its scheduled runs (the first sweep before READY).
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

// errSkipped is a run that did nothing on purpose (writes paused): counted
// as skipped, not followed by After.
var errSkipped = errors.New("skipped: background writes paused")

func isOverBudget(err error) bool { return errors.Is(err, reaper.ErrSweepOverBudget) }
