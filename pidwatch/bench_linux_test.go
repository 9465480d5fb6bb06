//go:build linux

package pidwatch

import (
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sleeper starts `sleep 3600` with the bare fork/exec: an exec.Cmd's
// os.Process holds a pidfd of its own, and 10,000 of those next to the
// watcher's would run into the fd limit. The caller kills and reaps it.
func sleeper(b *testing.B, path string) int {
	b.Helper()
	pid, err := syscall.ForkExec(path, []string{"sleep", "3600"}, &syscall.ProcAttr{})
	if err != nil {
		b.Fatalf("start sleep: %v", err)
	}
	return pid
}

func reapPID(pid int) {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
			return
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDeath measures kill → Death received with 1,000 and 10,000
// live processes watched: one is killed per iteration (and reaped at once
// by the benchmark, their parent, as init would), then replaced untimed so
// the count stays. It also reports the watcher's idle CPU over one second
// with all of them watched, and how often the first Death already had the
// exit status. Run with -benchtime=Nx: the replacement fork is not timed,
// so a duration benchtime forks many more processes than it counts.
func BenchmarkDeath(b *testing.B) {
	path, err := exec.LookPath("sleep")
	if err != nil {
		b.Skipf("no sleep binary: %v", err)
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("watched=%d", n), func(b *testing.B) { benchDeath(b, path, n) })
	}
}

func benchDeath(b *testing.B, path string, n int) {
	w := newWatcher(b)
	pids := make([]int, n)
	b.Cleanup(func() {
		for _, pid := range pids {
			if pid != 0 {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		for _, pid := range pids {
			if pid != 0 {
				reapPID(pid)
			}
		}
	})
	for i := range pids {
		pids[i] = sleeper(b, path)
		if err := w.Watch(strconv.Itoa(i), pids[i], same); err != nil {
			b.Fatalf("Watch %d: %v", i, err)
		}
	}

	idleFrom := cpuTime(b)
	time.Sleep(time.Second)
	idle := cpuTime(b) - idleFrom

	var latencies []time.Duration
	firstKnown := 0
	i := 0
	for b.Loop() {
		k := i % n
		i++
		key, victim := strconv.Itoa(k), pids[k]
		start := time.Now()
		if err := unix.Kill(victim, unix.SIGKILL); err != nil {
			b.Fatalf("kill %d: %v", victim, err)
		}
		reaped := make(chan struct{})
		go func() { reapPID(victim); close(reaped) }()
		for {
			d := <-w.Deaths()
			if d.Key == key && d.PID == victim {
				if d.Exit.Known {
					firstKnown++
				}
				break
			}
			// A second Death (exit status) of an earlier victim.
		}
		latencies = append(latencies, time.Since(start))

		b.StopTimer()
		<-reaped
		pids[k] = 0
		pids[k] = sleeper(b, path)
		if err := w.Watch(key, pids[k], same); err != nil {
			b.Fatalf("Watch %d: %v", k, err)
		}
		b.StartTimer()
	}

	slices.Sort(latencies)
	at := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(float64(idle.Microseconds()), "idle-cpu-µs/s")
	b.ReportMetric(100*float64(firstKnown)/float64(len(latencies)), "%exit-at-once")
}

// BenchmarkWatch is the cost of watching one process and forgetting it
// again: pidfd_open, the identity check (here a constant), epoll_ctl, and
// close.
func BenchmarkWatch(b *testing.B) {
	path, err := exec.LookPath("sleep")
	if err != nil {
		b.Skipf("no sleep binary: %v", err)
	}
	w := newWatcher(b)
	pid := sleeper(b, path)
	b.Cleanup(func() {
		_ = unix.Kill(pid, unix.SIGKILL)
		reapPID(pid)
	})
	for b.Loop() {
		if err := w.Watch("k", pid, same); err != nil {
			b.Fatalf("Watch: %v", err)
		}
		w.Forget("k")
	}
}
