package daemon

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"watchdog/internal/cronspec"
	"watchdog/reaper"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

type runLog struct {
	mu   sync.Mutex
	runs []string
}

func (l *runLog) JobRun(job, result string, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, job+":"+result)
}

func (l *runLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.runs...)
}

func newTestScheduler(t *testing.T, jobs ...Job) (*Scheduler, *runLog, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	obs := &runLog{}
	s, err := NewScheduler(context.Background(), cronspec.Parser, jobs, zap.New(core), obs)
	if err != nil {
		t.Fatal(err)
	}
	return s, obs, logs
}

// TestSchedulerSkipsOverlapAndCountsIt: a run that finds the previous one
// still going is skipped, logged and counted as skipped; the job body
// never runs twice at once.
func TestSchedulerSkipsOverlapAndCountsIt(t *testing.T) {
	// Buffered: the body may get here before the test waits on it, and a
	// dropped signal would leave both waiting for each other.
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	running, maxRunning := 0, 0
	job := Job{Name: "sweep", Spec: "@every 1h", Run: func(context.Context) error {
		mu.Lock()
		running++
		maxRunning = max(maxRunning, running)
		mu.Unlock()
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	}}
	s, obs, logs := newTestScheduler(t, job)
	done := make(chan struct{})
	go func() { s.RunNow(job); close(done) }()
	<-entered
	s.RunNow(job) // overlaps the first: must return at once, skipped
	close(release)
	<-done
	if got := obs.all(); len(got) != 2 || got[0] != "sweep:skipped" || got[1] != "sweep:ok" {
		t.Errorf("runs %v, want [sweep:skipped sweep:ok]", got)
	}
	if maxRunning != 1 {
		t.Errorf("the body ran %d times at once", maxRunning)
	}
	if logs.FilterMessage("previous run still going, skipping this one").Len() != 1 {
		t.Error("the skip was not logged")
	}
}

// TestSchedulerRecoversPanics: a panicking job is logged with its stack
// and counted as an error, the scheduler survives, and the job runs again
// next time (its overlap guard released).
func TestSchedulerRecoversPanics(t *testing.T) {
	calls := 0
	job := Job{Name: "vacuum", Spec: "@every 1h", Run: func(context.Context) error {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return nil
	}}
	after := 0
	job.After = func() { after++ }
	s, obs, logs := newTestScheduler(t, job)
	s.RunNow(job)
	s.RunNow(job)
	if got := obs.all(); len(got) != 2 || got[0] != "vacuum:error" || got[1] != "vacuum:ok" {
		t.Errorf("runs %v, want [vacuum:error vacuum:ok]", got)
	}
	if after != 1 {
		t.Errorf("After ran %d times, want once (only after a successful run)", after)
	}
	p := logs.FilterMessage("job panicked").All()
	if len(p) != 1 || p[0].ContextMap()["stack"] == nil {
		t.Errorf("panic not logged with a stack: %+v", p)
	}
}

// TestSchedulerCountsFailuresAndTimeouts: an error is "error" and does not
// run After (the watchdog ping); a sweep over its budget is "timeout" and
// does (the loop is alive and the store answered: slow is not wedged).
func TestSchedulerCountsFailuresAndTimeouts(t *testing.T) {
	failPinged, slowPinged := 0, 0
	fail := Job{Name: "enforce_terminal", Spec: "@every 1h", Run: func(context.Context) error { return errors.New("store gone") }, After: func() { failPinged++ }}
	slow := Job{Name: "sweep", Spec: "@every 1h", Run: func(context.Context) error { return reaper.ErrSweepOverBudget }, After: func() { slowPinged++ }}
	s, obs, _ := newTestScheduler(t, fail, slow)
	s.RunNow(fail)
	s.RunNow(slow)
	if got := obs.all(); len(got) != 2 || got[0] != "enforce_terminal:error" || got[1] != "sweep:timeout" {
		t.Errorf("runs %v", got)
	}
	if failPinged != 0 {
		t.Errorf("After ran %d times after a failed run", failPinged)
	}
	if slowPinged != 1 {
		t.Errorf("After ran %d times after an over-budget sweep, want 1", slowPinged)
	}
}

// TestSchedulerRefusesBadSpec names the job and the spec.
func TestSchedulerRefusesBadSpec(t *testing.T) {
	_, err := NewScheduler(context.Background(), cronspec.Parser, []Job{{Name: "sweep", Spec: "every now and then", Run: func(context.Context) error { return nil }}}, zap.NewNop(), nil)
	if err == nil || !strings.Contains(err.Error(), "jobs.sweep") || !strings.Contains(err.Error(), "every now and then") {
		t.Errorf("err %v", err)
	}
}
