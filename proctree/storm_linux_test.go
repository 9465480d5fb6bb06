//go:build linux

package proctree

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stormEnv makes the test binary a fork storm instead of a test run:
// "<duration>,<forks per second>" (0: as fast as it can). It prints how
// many processes it started.
const stormEnv = "PROCTREE_STORM_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(stormEnv); spec != "" {
		os.Exit(storm(spec))
	}
	os.Exit(m.Run())
}

// storm starts short-lived processes for a while, one at a time: each a
// vfork whose child exits at once (no exec: the cheapest process the
// kernel can make, so the storm is as dense as a machine allows), reaped
// before the next. Each is one fork and one exit event for every listener.
func storm(spec string) int {
	durS, rateS, _ := strings.Cut(spec, ",")
	d, err := time.ParseDuration(durS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		return 2
	}
	rate, _ := strconv.Atoi(rateS)
	start := time.Now()
	end := start.Add(d)
	n := 0
	for now := start; now.Before(end); now = time.Now() {
		if rate > 0 {
			// Paced: ahead of the schedule, wait for it.
			if due := start.Add(time.Duration(n) * time.Second / time.Duration(rate)); due.After(now) {
				time.Sleep(due.Sub(now))
			}
		}
		for range 50 {
			// CLONE_VM|CLONE_VFORK: the child runs on our stack while this
			// thread waits, and only makes the exit call (as the syscall
			// package's own fork does before exec).
			pid, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD|syscall.CLONE_VM|syscall.CLONE_VFORK), 0, 0, 0, 0, 0)
			if e != 0 {
				continue
			}
			if pid == 0 {
				syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
			}
			var ws syscall.WaitStatus
			for {
				if _, err := syscall.Wait4(int(pid), &ws, 0, nil); err != syscall.EINTR {
					break
				}
			}
			n++
		}
	}
	fmt.Println(n)
	return 0
}

// cpuTime is this process's CPU time so far (user + system): the Tree's
// reader is its only busy goroutine while a benchmark waits.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkForkStorm measures what a storm of unwatched short-lived
// processes, run by another process, costs the Tree, as a share of one
// core: this process's CPU over the storm less its CPU over an idle
// stretch of the same length (the machine's other forks reach the Tree
// then too). Afterwards every watched set must equal a /proc walk. Side
// by side in one run: the Tree with the kernel-side filter (ADR-0045),
// without it (every event read, as before), and no Tree at all (what the
// storm costs itself then: %of_storm_cpu compares, and the storm's own
// ns/fork says what a listener adds to every fork on the host).
//
//	go test -run '^$' -bench ForkStorm -benchtime 1x -count 3 ./proctree
//
// PROCTREE_STORM_SECONDS (default 10) and PROCTREE_STORM_RATE (forks per
// second, default 6000; 0 as fast as the machine allows) set the storm.
func BenchmarkForkStorm(b *testing.B) {
	for _, v := range []struct {
		name string
		opt  *Options
	}{
		{"tree=filtered", &Options{}},
		{"tree=unfiltered", &Options{unfiltered: true}},
		{"tree=none", nil},
	} {
		b.Run(v.name, func(b *testing.B) { forkStorm(b, v.opt) })
	}
}

func forkStorm(b *testing.B, opt *Options) {
	var tr *Tree
	if opt != nil {
		var err error
		if tr, err = New(*opt); err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		if tr.Mode() != ModeEvents {
			b.Skipf("process connector unavailable here: %v", tr.Why())
		}
		if ferr := tr.Filter(); !opt.unfiltered && ferr != nil {
			b.Fatalf("no filter: %v", ferr)
		}
	}
	secs, rate := 10, 6000
	if v, err := strconv.Atoi(os.Getenv("PROCTREE_STORM_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	if v, err := strconv.Atoi(os.Getenv("PROCTREE_STORM_RATE")); err == nil && v >= 0 {
		rate = v
	}
	d := time.Duration(secs) * time.Second

	// Watched trees beside the storm: a few shells with children and
	// grandchildren, so that the lookups the storm's events make are in a
	// map that holds something.
	var roots []Root
	for range 4 {
		cmd := exec.Command("sh", "-c", `sleep 600 & sh -c 'sleep 600 & sleep 600 & wait' & wait`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pid := cmd.Process.Pid
		defer func() {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}()
		var s stat
		var err error
		if s, _, err = readStat("/proc", pid, make([]byte, 0, 1024)); err != nil {
			b.Fatal(err)
		}
		root := Root{PID: pid, StartTicks: s.startTicks}
		if tr != nil {
			if err := tr.Watch(root); err != nil {
				b.Fatal(err)
			}
		}
		roots = append(roots, root)
	}

	for b.Loop() {
		c0 := cpuTime(b)
		time.Sleep(d)
		idle := cpuTime(b) - c0

		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", stormEnv, d, rate))
		c0 = cpuTime(b)
		t0 := time.Now()
		out, err := child.Output()
		wall := time.Since(t0)
		busy := cpuTime(b) - c0
		if err != nil {
			b.Fatalf("storm: %v", err)
		}
		forks, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			b.Fatalf("storm printed %q", out)
		}
		// The idle stretch scaled to the storm's wall time, which the
		// child's start and end make a little longer than d.
		idleScaled := time.Duration(float64(idle) * float64(wall) / float64(d))
		st := child.ProcessState
		stormCPU := st.UserTime() + st.SystemTime()
		b.ReportMetric(float64(forks)/d.Seconds(), "forks/s")
		b.ReportMetric(100*float64(busy-idleScaled)/float64(wall), "%core")
		b.ReportMetric(100*float64(idle)/float64(d), "%core_idle")
		b.ReportMetric(100*float64(busy)/float64(wall), "%core_storm")
		// Side by side: the Tree's cost against the storm's own CPU, and
		// the storm's own CPU per fork (what the kernel's event, and the
		// filter run in the forking task, add to every fork).
		b.ReportMetric(100*float64(busy-idleScaled)/float64(stormCPU), "%of_storm_cpu")
		b.ReportMetric(float64(stormCPU.Nanoseconds())/float64(max(forks, 1)), "storm_ns/fork")
		if tr != nil {
			b.ReportMetric(float64(tr.Lost()), "lost")
			b.ReportMetric(float64(tr.events.Load()), "events")
		}
	}
	if tr == nil {
		return
	}

	snap, err := walk("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, root := range roots {
		got, err := tr.Descendants(root)
		if err != nil {
			b.Fatal(err)
		}
		want := slices.Sorted(maps.Keys(snap.under(root.PID, map[int]uint64{})))
		if !slices.Equal(pids(got), want) {
			b.Errorf("root %d after the storm: the tree has %v, a /proc walk %v", root.PID, pids(got), want)
		}
		if len(want) != 4 {
			b.Errorf("root %d: %d descendants by /proc, want its 4", root.PID, len(want))
		}
	}
}
