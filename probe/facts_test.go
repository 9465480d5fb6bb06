//go:build linux

package probe

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/proctree"
	"watchdog/state"
)

// subjectOf is pid's recorded identity, as registration records it.
func subjectOf(t *testing.T, h *Host, pid int) PIDSubject {
	t.Helper()
	id := identify(t, h, pid)
	return PIDSubject{PID: pid, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID}
}

// membersOf is pid's tree as proctree seeds it.
func membersOf(pid int, ticks uint64) []TreeMember {
	ms, _ := proctree.MembersOf(nil, proctree.Root{PID: pid, StartTicks: ticks})
	out := make([]TreeMember, len(ms))
	for i, m := range ms {
		out[i] = TreeMember{PID: m.PID, StartTicks: m.StartTicks}
	}
	return out
}

func TestFactsOfASleep(t *testing.T) {
	h := NewHost()
	cmd := testenv.Sleep(t)
	subj := subjectOf(t, h, cmd.Process.Pid)
	// A process just started may read an RSS of 0 for a moment (the
	// kernel's counters of a new mm are summed lazily): the test waits
	// for the first read that has one, as an operator would see it.
	now := time.Now()
	var f state.ProcessFacts
	testenv.Eventually(t, "a read of the sleep with its RSS", time.Minute, func() (bool, string) {
		f = NewFacts(h).Read(subj, membersOf(subj.PID, subj.StartTicks), "seed", now)
		return f.ProcessUsage != nil && f.ProcessUsage.RSSBytes > 0, fmt.Sprintf("%+v", f)
	})
	if f.Unavailable != "" || f.ProcessUsage == nil {
		t.Fatalf("facts of a live sleep: unavailable %q", f.Unavailable)
	}
	u := f.ProcessUsage
	if f.PID != subj.PID || u.Threads != 1 || u.RSSBytes == 0 || u.Descendants != 0 || u.Tasks != 1 || u.TreeRSSBytes != u.RSSBytes || u.TreeMode != "seed" {
		t.Errorf("facts of a sleep: %+v %+v", f, *u)
	}
	if !u.StartedAt.Time.Equal(subj.StartTime) || u.UptimeSeconds < 0 || u.UptimeSeconds > now.Sub(subj.StartTime).Seconds()+1 {
		t.Errorf("started %v (recorded %v), uptime %v", u.StartedAt.Time, subj.StartTime, u.UptimeSeconds)
	}
	// A first read has no earlier one: the lifetime average.
	if u.CPUWindowSeconds != u.UptimeSeconds || u.CPUPercent < 0 {
		t.Errorf("first read's CPU: %v%% over %vs, uptime %vs", u.CPUPercent, u.CPUWindowSeconds, u.UptimeSeconds)
	}
}

func TestFactsOfAShellWithChildren(t *testing.T) {
	h := NewHost()
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The sleeps are in the shell's own process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	subj := subjectOf(t, h, cmd.Process.Pid)
	facts := NewFacts(h)
	var f state.ProcessFacts
	testenv.Eventually(t, "the shell's two sleeps among its facts", 2*time.Minute, func() (bool, string) {
		f = facts.Read(subj, membersOf(subj.PID, subj.StartTicks), "seed", time.Now())
		if f.ProcessUsage == nil {
			return false, "unavailable: " + f.Unavailable
		}
		// A child read between its fork and its exec can show no memory
		// of its own yet: wait for both sleeps to have some.
		u := f.ProcessUsage
		return f.Descendants == 2 && u.TreeRSSBytes > u.RSSBytes, fmt.Sprintf("%+v", *u)
	})
	u := f.ProcessUsage
	if u.Tasks != 3 || u.TreeRSSBytes <= u.RSSBytes || u.DescendantsMore || u.DescendantsText() != "2" {
		t.Errorf("tree of a shell with two sleeps: %+v", *u)
	}
}

func TestFactsRecentCPU(t *testing.T) {
	h := NewHost()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	subj := subjectOf(t, h, cmd.Process.Pid)
	facts := NewFacts(h)
	first := time.Now()
	f := facts.Read(subj, nil, "seed", first)
	if f.ProcessUsage == nil {
		t.Fatalf("unavailable: %s", f.Unavailable)
	}
	// A read under a second after the last one has no window of its own:
	// still the lifetime average.
	testenv.Eventually(t, "a read a second after the first measured since it", 2*time.Minute, func() (bool, string) {
		now := time.Now()
		g := facts.Read(subj, nil, "seed", now)
		if g.ProcessUsage == nil {
			return false, "unavailable: " + g.Unavailable
		}
		d := now.Sub(first)
		if d < minCPUWindow {
			if g.CPUWindowSeconds != g.UptimeSeconds {
				t.Fatalf("a read %v after the first measured over %vs, not the lifetime", d, g.CPUWindowSeconds)
			}
			return false, "too soon"
		}
		return g.CPUWindowSeconds == d.Seconds() && g.CPUPercent > 0 && g.CPUSeconds >= f.CPUSeconds,
			fmt.Sprintf("%v%% over %vs (%v since the first read)", g.CPUPercent, g.CPUWindowSeconds, d)
	})
}

func TestFactsUnavailable(t *testing.T) {
	h := NewHost()
	cmd := testenv.Sleep(t)
	live := subjectOf(t, h, cmd.Process.Pid)
	reused := live
	reused.StartTicks++
	noStart := PIDSubject{PID: live.PID}
	for _, tc := range []struct {
		name string
		subj PIDSubject
		want string
	}{
		{"pid reused", reused, "pid reused"},
		{"gone", PIDSubject{PID: testenv.DeadPID(t)}, "no such process"},
		{"start not recorded", noStart, "start time not recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFacts(h).Read(tc.subj, nil, "seed", time.Now())
			if f.ProcessUsage != nil || f.Unavailable != tc.want {
				t.Errorf("facts: %+v, want unavailable %q", f, tc.want)
			}
		})
	}
}

func TestFactsReadAtMostMaxDescendants(t *testing.T) {
	h := NewHost()
	cmd := testenv.Sleep(t)
	subj := subjectOf(t, h, cmd.Process.Pid)
	// Members the tree named but that are gone: each costs a read, none
	// counts, and past the bound none is read.
	var members []TreeMember
	for i := range state.MaxFactsDescendants + 10 {
		members = append(members, TreeMember{PID: 1<<22 + 100 + i, StartTicks: 1})
	}
	f := NewFacts(h).Read(subj, members, "walk", time.Now())
	if f.ProcessUsage == nil || f.Descendants != 0 || !f.DescendantsMore || f.DescendantsText() != "0+" {
		t.Fatalf("facts past the bound: %+v", f)
	}
}

func TestParseUsage(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       usage
		bad        bool
	}{
		{name: "plain", line: "42 (sleep) S 1 42 42 0 -1 4194304 90 0 0 0 7 3 0 0 20 0 1 0 12345 2240512 129 18446744073709551615",
			want: usage{state: 'S', cpuTicks: 10, threads: 1, startTicks: 12345, rssPages: 129}},
		{name: "a name with ) and spaces", line: "42 (a) b (c) R 1 42 42 0 -1 4194304 90 0 0 0 70 30 0 0 20 0 4 0 99 2240512 300 0",
			want: usage{state: 'R', cpuTicks: 100, threads: 4, startTicks: 99, rssPages: 300}},
		{name: "short", line: "42 (sleep) S 1 42 42 0", bad: true},
		{name: "no name", line: "42 sleep S", bad: true},
		{name: "not a number", line: "42 (sleep) S 1 42 42 0 -1 4194304 90 0 0 0 x 3 0 0 20 0 1 0 12345 2240512 129 0", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseUsage([]byte(tc.line))
			if tc.bad {
				if err == nil {
					t.Fatalf("parsed %+v", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
