//go:build linux

package pidwatch_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/judge"
	"watchdog/monitor"
	"watchdog/pidwatch"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// This file drives the monitor over a real Watcher and real processes. It
// lives beside pidwatch, not monitor, for one reason: only this
// directory's tests can shrink the queue's bound (SetQueueMaxForTest), so
// that a handful of processes overflows it.

// ceiling is the generous wait for what the kernel and the monitor's
// goroutine do on their own time (never a speed assertion).
const ceiling = 2 * time.Minute

// judgeSteps stands in for the reaper's per-entity steps: a check asks the
// real probe about the recorded process, and one found dead is recorded
// and handed back to the monitor as the store's change feed would. While
// gate is open every check waits on it: the monitor held up, as a slow
// store holds it, so that deaths pile up in the watcher's queue.
type judgeSteps struct {
	host *probe.Host
	mon  *monitor.Monitor
	gate chan struct{} // closed: checks run

	mu      sync.Mutex
	waiting int             // checks waiting at the gate
	checked map[string]int  // checks per key
	dead    map[string]bool // keys the probe found dead
}

func (j *judgeSteps) Observe(_ context.Context, e store.Entity, _ judge.Event) (bool, error) {
	key := monitor.Key(e.Type, e.ID)
	j.mu.Lock()
	j.waiting++
	j.mu.Unlock()
	<-j.gate
	seen := j.host.CheckPID(probe.PIDSubject{PID: e.PID, StartTime: e.PIDStartTime, StartTicks: e.PIDStartTicks, HostID: e.HostID, BootID: e.BootID})
	j.mu.Lock()
	j.waiting--
	j.checked[key]++
	dead := seen.Liveness == probe.Dead
	if dead {
		j.dead[key] = true
	}
	j.mu.Unlock()
	if dead && e.DeadSince.IsZero() {
		c := e
		c.Health, c.DeadSince = state.HealthProcessDead, time.Now()
		j.mon.Update(c)
	}
	return dead, nil
}

func (j *judgeSteps) EnforceEntity(context.Context, store.Entity, judge.Event) (bool, error) {
	return false, nil
}
func (j *judgeSteps) ReapPhantomEntity(context.Context, store.Entity) (bool, error) {
	return false, nil
}
func (j *judgeSteps) CheckScheduleEntity(context.Context, store.Entity) (bool, error) {
	return false, nil
}

func (j *judgeSteps) state() (waiting int, dead []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for k := range j.dead {
		dead = append(dead, k)
	}
	slices.Sort(dead)
	return j.waiting, dead
}

// relay is the Watcher with its deaths passed on through a channel of its
// own, so that the test knows which deaths reached the monitor as deaths
// (the rest can only have been found by the resync).
type relay struct {
	*pidwatch.Watcher
	out chan pidwatch.Death

	mu        sync.Mutex
	delivered map[string]bool
}

func newRelay(t *testing.T, w *pidwatch.Watcher) *relay {
	r := &relay{Watcher: w, out: make(chan pidwatch.Death), delivered: map[string]bool{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case d := <-w.Deaths():
				r.mu.Lock()
				r.delivered[d.Key] = true
				r.mu.Unlock()
				select {
				case r.out <- d:
				case <-stop:
					return
				}
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return r
}

func (r *relay) Deaths() <-chan pidwatch.Death { return r.out }

func (r *relay) deliveredKeys() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.delivered)
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", cmd.Process.Pid, err)
	}
	_ = cmd.Wait()
}

// TestOverflowResyncJudgesEveryDeath: the monitor held up in a check while
// real processes die; the watcher's queue (bound 1) overflows, counts the
// drops and signals a resync; once the monitor runs again every process
// that died is judged dead (most of them found by the resync, their
// deaths never delivered), and the one still alive is not.
func TestOverflowResyncJudgesEveryDeath(t *testing.T) {
	w, err := pidwatch.New()
	if errors.Is(err, pidwatch.ErrUnsupported) {
		t.Skipf("no pidfds here: %v", err)
	}
	if err != nil {
		t.Fatalf("pidwatch.New: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	w.SetQueueMaxForTest(1)
	r := newRelay(t, w)

	host := probe.NewHost()
	j := &judgeSteps{host: host, gate: make(chan struct{}), checked: map[string]int{}, dead: map[string]bool{}}
	mon := monitor.New(monitor.Options{Reaper: j, Watcher: r, Prober: host, HostID: host.HostID()})
	j.mon = mon

	const dying = 8
	var cmds []*exec.Cmd
	now := time.Now()
	running := "running"
	for i := range dying + 1 { // the last one lives on
		cmd := testenv.Sleep(t)
		id, err := host.Identify(cmd.Process.Pid)
		if err != nil {
			t.Fatalf("Identify: %v", err)
		}
		mon.Update(store.Entity{Type: "session", ID: fmt.Sprintf("s%d", i), Lifecycle: &running, HostID: id.HostID, BootID: id.BootID,
			PID: id.PID, PIDStartTime: id.StartTime, PIDStartTicks: id.StartTicks, Health: state.HealthRunning,
			StartedAt: now, CreatedAt: now, LifecycleAt: now})
		cmds = append(cmds, cmd)
	}
	survivor := fmt.Sprintf("session/s%d", dying)

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- mon.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })

	testenv.Eventually(t, "every process watched by pidfd", ceiling, func() (bool, string) {
		pidfd, polled := mon.Watching()
		return pidfd == dying+1, fmt.Sprintf("pidfd %d, polled %d", pidfd, polled)
	})
	// The first death holds the monitor in its check.
	kill(t, cmds[0])
	testenv.Eventually(t, "the monitor held in the first death's check", ceiling, func() (bool, string) {
		waiting, _ := j.state()
		return waiting == 1, fmt.Sprintf("%d checks waiting", waiting)
	})
	for _, cmd := range cmds[1:dying] {
		kill(t, cmd)
	}
	// Every dead watch over: every Death made, queued or dropped, and
	// none can come later.
	testenv.Eventually(t, "every dead process's watch ended", ceiling, func() (bool, string) {
		return w.Len() == 1, fmt.Sprintf("Len = %d, overflows %d", w.Len(), w.Overflows())
	})
	// Held: the relay's one, the sender's one, the queue's one. Of the
	// other seven first deaths at least four were dropped.
	if n := w.Overflows(); n < dying-1-3 {
		t.Fatalf("overflows = %d, want at least %d", n, dying-1-3)
	}
	if n := len(w.Resync()); n != 1 {
		t.Fatalf("%d resync tokens pending, want 1", n)
	}

	close(j.gate)
	want := make([]string, 0, dying)
	for i := range dying {
		want = append(want, fmt.Sprintf("session/s%d", i))
	}
	slices.Sort(want)
	testenv.Eventually(t, "every process that died judged dead", ceiling, func() (bool, string) {
		_, dead := j.state()
		return slices.Equal(dead, want), fmt.Sprintf("judged dead %v, resyncs %d", dead, mon.Resyncs())
	})
	if mon.Resyncs() < 1 {
		t.Errorf("no resync answered")
	}
	delivered := r.deliveredKeys()
	var byResync []string
	for _, k := range want {
		if !delivered[k] {
			byResync = append(byResync, k)
		}
	}
	if len(byResync) < dying-1-3 {
		t.Errorf("only %v found without their death delivered (delivered %v): the overflow did not drop what it counted", byResync, delivered)
	}
	t.Logf("%d deaths dropped; found by the resync alone: %v", w.Overflows(), byResync)
	if _, dead := j.state(); slices.Contains(dead, survivor) {
		t.Errorf("the live process %s was judged dead", survivor)
	}
	testenv.Eventually(t, "the survivor still watched by pidfd, the dead no longer", ceiling, func() (bool, string) {
		pidfd, polled := mon.Watching()
		return pidfd == 1 && polled == 0, fmt.Sprintf("pidfd %d, polled %d", pidfd, polled)
	})
}
