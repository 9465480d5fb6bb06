//go:build linux

package probe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/state"
)

func identify(t *testing.T, h *Host, pid int) Identity {
	t.Helper()
	id, err := h.Identify(pid)
	if err != nil {
		t.Fatalf("Identify(%d): %v", pid, err)
	}
	return id
}

func TestCheckPIDLiveProcess(t *testing.T) {
	h := NewHost()
	cmd := testenv.Sleep(t)
	pid := cmd.Process.Pid
	id := identify(t, h, pid)

	if id.PPID != os.Getpid() {
		t.Errorf("PPID = %d, want the test process %d", id.PPID, os.Getpid())
	}
	if id.StartTicks == 0 || id.BootID == "" || id.HostID == "" {
		t.Errorf("identity incomplete: %+v", id)
	}
	// Loose on purpose: the point is "a start time of this era", not timing.
	if d := time.Since(id.StartTime); d < -time.Hour || d > time.Hour {
		t.Errorf("StartTime %v is %v away from now", id.StartTime, d)
	}

	for _, tc := range []struct {
		name    string
		subject PIDSubject
		cause   PIDCause
	}{
		{"full identity", PIDSubject{PID: pid, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID}, CauseNone},
		{"wall clock only", PIDSubject{PID: pid, StartTime: id.StartTime}, CauseNone},
		{"wall clock within 1s", PIDSubject{PID: pid, StartTime: id.StartTime.Add(900 * time.Millisecond)}, CauseNone},
		{"bare pid", PIDSubject{PID: pid}, CauseIdentityUnset},
		{"ticks without boot id cannot compare", PIDSubject{PID: pid, StartTicks: id.StartTicks}, CauseIdentityUnset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := h.CheckPID(tc.subject)
			if o.Liveness != Alive || o.Cause != tc.cause {
				t.Fatalf("got %v/%v (%s), want alive/%v", o.Liveness, o.Cause, o.Detail(), tc.cause)
			}
			if !strings.Contains(o.Detail(), fmt.Sprintf("pid %d alive (state ", pid)) {
				t.Errorf("detail %q", o.Detail())
			}
		})
	}
}

func TestCheckPIDReused(t *testing.T) {
	h := NewHost()
	pid := testenv.Sleep(t).Process.Pid
	id := identify(t, h, pid)
	for _, tc := range []struct {
		name    string
		subject PIDSubject
	}{
		{"wall clock beyond 1s", PIDSubject{PID: pid, StartTime: id.StartTime.Add(-100 * time.Second)}},
		{"wall clock just beyond 1s", PIDSubject{PID: pid, StartTime: id.StartTime.Add(1500 * time.Millisecond)}},
		// Same boot: ticks compare exactly, even where the wall clock would
		// let a tick through.
		{"ticks differ by one", PIDSubject{PID: pid, StartTime: id.StartTime, StartTicks: id.StartTicks + 1, BootID: id.BootID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := h.CheckPID(tc.subject)
			if o.Liveness != Dead || o.Cause != CausePIDReused {
				t.Fatalf("got %v/%v (%s), want dead/pid reused", o.Liveness, o.Cause, o.Detail())
			}
			if !strings.Contains(o.Detail(), "reused by another process") {
				t.Errorf("detail %q", o.Detail())
			}
		})
	}
}

func TestCheckPIDKilledProcessIsDead(t *testing.T) {
	h := NewHost()
	cmd := testenv.Sleep(t)
	pid := cmd.Process.Pid
	id := identify(t, h, pid)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // reaped: the pid is gone

	o := h.CheckPID(PIDSubject{PID: pid, StartTime: id.StartTime, StartTicks: id.StartTicks, BootID: id.BootID})
	// The pid could in theory be reused at once; then it is still dead, by
	// identity.
	if o.Liveness != Dead || (o.Cause != CauseNoSuchProcess && o.Cause != CausePIDReused) {
		t.Fatalf("got %v/%v (%s), want dead", o.Liveness, o.Cause, o.Detail())
	}
	want := fmt.Sprintf("pid %d not running (no such process; start time %.2f; exit status not available)", pid, unixtime.Seconds(id.StartTime))
	if o.Cause == CauseNoSuchProcess && o.Detail() != want {
		t.Errorf("detail %q, want %q", o.Detail(), want)
	}
	if _, err := h.Identify(pid); o.Cause == CauseNoSuchProcess && !errors.Is(err, ErrNoSuchProcess) {
		t.Errorf("Identify of a dead pid: %v, want ErrNoSuchProcess", err)
	}
}

func TestCheckPIDZombie(t *testing.T) {
	h := NewHost()
	// A child that exited and was not Wait()ed is a zombie of this test
	// process until it is.
	pid := testenv.Zombie(t)
	o := h.CheckPID(PIDSubject{PID: pid})
	if o.Liveness != Dead || o.Cause != CauseZombie || o.State != 'Z' {
		t.Fatalf("got %v/%v state %q (%s), want dead zombie", o.Liveness, o.Cause, o.State, o.Detail())
	}
	if !strings.Contains(o.Detail(), "zombie, state Z") {
		t.Errorf("detail %q", o.Detail())
	}
	if _, err := h.Identify(pid); !errors.Is(err, ErrNoSuchProcess) {
		t.Errorf("Identify of a zombie: %v, want ErrNoSuchProcess", err)
	}
	// StartOf still reads the zombie's start (the write path records it for
	// a child that exited before it was registered), and recorded that way
	// it makes the zombie's probe conclusive by identity too.
	st, ticks, err := h.StartOf(pid)
	if err != nil || !st.After(unixAt(0)) {
		t.Fatalf("StartOf a zombie: %v, %v", st, err)
	}
	if o := h.CheckPID(PIDSubject{PID: pid, StartTime: st, StartTicks: ticks}); o.Liveness != Dead || o.Cause != CauseZombie {
		t.Errorf("zombie with its recorded start: %v/%v", o.Liveness, o.Cause)
	}
	if _, _, err := h.StartOf(0); err == nil {
		t.Error("StartOf(0) succeeded")
	}
}

func TestCheckPIDHostAndBoot(t *testing.T) {
	dir := t.TempDir()
	machineID := filepath.Join(dir, "machine-id")
	if err := os.WriteFile(machineID, []byte("host-a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pid := testenv.Sleep(t).Process.Pid
	// The real /proc, but another boot id: a reboot cannot be made real.
	h := &Host{MachineIDPath: machineID, BootIDSource: func() (string, error) { return "boot-2", nil }}
	if h.HostID() != "host-a" {
		t.Fatalf("HostID = %q, want the trimmed machine id", h.HostID())
	}

	o := h.CheckPID(PIDSubject{PID: pid, BootID: "boot-1"})
	if o.Liveness != Dead || o.Cause != CauseHostRebooted {
		t.Errorf("other boot: got %v/%v", o.Liveness, o.Cause)
	}
	if want := fmt.Sprintf("pid %d not running: host rebooted (boot id boot-2, recorded boot-1)", pid); o.Detail() != want {
		t.Errorf("detail %q, want %q", o.Detail(), want)
	}

	o = h.CheckPID(PIDSubject{PID: pid, BootID: "boot-2", HostID: "host-a"})
	if o.Liveness != Alive {
		t.Errorf("same host and boot: got %v/%v", o.Liveness, o.Cause)
	}

	// Another host's pid is not checked here, even though the same pid
	// lives on this host.
	o = h.CheckPID(PIDSubject{PID: pid, HostID: "host-b", BootID: "boot-1"})
	if o.Liveness != Unknown || !o.OtherHost() {
		t.Errorf("other host: got %v/%v", o.Liveness, o.Cause)
	}
	if want := fmt.Sprintf("pid %d is on host host-b, this is host-a: not checked", pid); o.Detail() != want {
		t.Errorf("detail %q, want %q", o.Detail(), want)
	}

	// Missing machine id: the hostname.
	h2 := &Host{MachineIDPath: filepath.Join(dir, "absent")}
	if name, _ := os.Hostname(); h2.HostID() != name {
		t.Errorf("HostID fallback = %q, want hostname %q", h2.HostID(), name)
	}
}

func TestCheckPIDNoPID(t *testing.T) {
	h := NewHost()
	for _, pid := range []int{0, -1} {
		o := h.CheckPID(PIDSubject{PID: pid})
		if o.Liveness != Unknown || o.Cause != CauseNoPID || o.Detail() != "no pid recorded yet" {
			t.Errorf("pid %d: got %v/%v %q", pid, o.Liveness, o.Cause, o.Detail())
		}
	}
	if _, err := h.Identify(0); err == nil {
		t.Error("Identify(0) succeeded")
	}
}

// fakeProc builds a /proc fixture: what a real one cannot show (an
// unparsable stat, a stat that is a directory, odd comm names).
func fakeProc(t *testing.T, stats map[int]string) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "stat"), "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n")
	write(filepath.Join(root, "sys/kernel/random/boot_id"), "fake-boot\n")
	for pid, s := range stats {
		write(filepath.Join(root, fmt.Sprint(pid), "stat"), s)
	}
	return root
}

// statLine is a /proc/<pid>/stat line with the given comm, state, ppid and
// start ticks.
func statLine(pid int, comm string, st byte, ppid int, ticks uint64) string {
	return fmt.Sprintf("%d (%s) %c %d 100 100 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 5000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		pid, comm, st, ppid, ticks)
}

func TestCheckPIDFakeProc(t *testing.T) {
	root := fakeProc(t, map[int]string{
		10: statLine(10, "evil) R 1 (name", 'S', 7, 12345),
		11: "11 (truncated) S 1 2",
		12: statLine(12, "dead", 'X', 1, 5),
	})
	if err := os.MkdirAll(filepath.Join(root, "13", "stat"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &Host{ProcRoot: root}
	if b, _ := h.BootID(); b != "fake-boot" {
		t.Fatalf("BootID = %q", b)
	}

	id, err := h.Identify(10)
	if err != nil {
		t.Fatal(err)
	}
	if id.State != 'S' || id.PPID != 7 || id.StartTicks != 12345 || !id.StartTime.Equal(unixAt(1700000000+123.45)) {
		t.Errorf("identity %+v", id)
	}

	for _, tc := range []struct {
		name     string
		subject  PIDSubject
		liveness Liveness
		cause    PIDCause
	}{
		// Success cases
		{"comm with ) and spaces", PIDSubject{PID: 10, StartTime: unixAt(1700000123.45)}, Alive, CauseNone},
		{"exact ticks, same boot", PIDSubject{PID: 10, StartTicks: 12345, BootID: "fake-boot"}, Alive, CauseNone},
		// Failure cases
		{"no such pid", PIDSubject{PID: 99}, Dead, CauseNoSuchProcess},
		{"state X", PIDSubject{PID: 12}, Dead, CauseZombie},
		{"ticks differ", PIDSubject{PID: 10, StartTicks: 12346, BootID: "fake-boot"}, Dead, CausePIDReused},
		// Inconclusive cases
		{"unparsable", PIDSubject{PID: 11}, Unknown, CauseUnparsable},
		{"unreadable (a directory)", PIDSubject{PID: 13}, Unknown, CauseUnreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := h.CheckPID(tc.subject)
			if o.Liveness != tc.liveness || o.Cause != tc.cause {
				t.Errorf("got %v/%v (%s), want %v/%v", o.Liveness, o.Cause, o.Detail(), tc.liveness, tc.cause)
			}
		})
	}
}

// fakeReader stands in for what cannot be made real here: a process that
// vanishes between open and read, and (the tests run as root) a permission
// error.
type fakeReader struct{ err error }

func (f fakeReader) read(int, *scratch) (procStat, error) { return procStat{}, f.err }
func (fakeReader) ticks() bool                            { return true }

func TestCheckPIDReadErrors(t *testing.T) {
	for _, tc := range []struct {
		err      error
		liveness Liveness
		cause    PIDCause
	}{
		{errVanished, Dead, CauseVanished},
		{ErrNoSuchProcess, Dead, CauseNoSuchProcess},
		{errPermission, Unknown, CausePermission},
		{errHidden, Unknown, CauseHidden},
		{errUnparsable, Unknown, CauseUnparsable},
		{errors.New("EIO"), Unknown, CauseUnreadable},
	} {
		h := &Host{}
		h.initOnce.Do(func() { h.reader = fakeReader{tc.err} })
		o := h.CheckPID(PIDSubject{PID: 42, StartTime: unixAt(1)})
		if o.Liveness != tc.liveness || o.Cause != tc.cause {
			t.Errorf("%v: got %v/%v, want %v/%v", tc.err, o.Liveness, o.Cause, tc.liveness, tc.cause)
		}
		if o.Liveness == Unknown && !strings.Contains(o.Detail(), "liveness unknown") {
			t.Errorf("%v: detail %q", tc.err, o.Detail())
		}
	}
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		want  procStat
		error bool
	}{
		// Success cases
		{"plain", statLine(1, "sleep", 'S', 1, 99), procStat{state: 'S', ppid: 1, startTicks: 99}, false},
		{"spaces and parens in comm", statLine(1, "a) b (c) d", 'R', 2, 7), procStat{state: 'R', ppid: 2, startTicks: 7}, false},
		{"empty comm", statLine(1, "", 'Z', 3, 8), procStat{state: 'Z', ppid: 3, startTicks: 8}, false},
		// Failure cases
		{"empty", "", procStat{}, true},
		{"no paren", "1 sleep S 1", procStat{}, true},
		{"truncated", "1 (x) S 1 2 3", procStat{}, true},
		{"bad ppid", strings.Replace(statLine(1, "x", 'S', 1, 5), " S 1 ", " S one ", 1), procStat{}, true},
		{"bad state", strings.Replace(statLine(1, "x", 'S', 1, 5), " S ", " SS ", 1), procStat{}, true},
	} {
		got, err := parseStat([]byte(tc.in))
		if (err != nil) != tc.error || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v, error %v", tc.name, got, err, tc.want, tc.error)
		}
	}
}

func TestParseStatAllocatesNothing(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	line := []byte(statLine(1, "sleep", 'S', 1, 99))
	if n := testing.AllocsPerRun(100, func() { _, _ = parseStat(line) }); n != 0 {
		t.Errorf("parseStat allocates %v times", n)
	}
}

func TestCheckPIDHealthyAllocatesNothing(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	h := NewHost()
	pid := testenv.Sleep(t).Process.Pid
	id := identify(t, h, pid)
	subj := PIDSubject{PID: pid, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID}
	if n := testing.AllocsPerRun(100, func() { h.CheckPID(subj) }); n != 0 {
		t.Errorf("CheckPID of a live pid allocates %v times", n)
	}
}

// TestReportedDeathReadsNothing: a death the kernel reported is Dead
// without a look at /proc, and says so.
func TestReportedDeathReadsNothing(t *testing.T) {
	h := &Host{ProcRoot: "/nonexistent"}
	o := h.CheckPID(PIDSubject{PID: 4242, Died: true, Exit: &state.ExitStatus{Code: 3}})
	if o.Liveness != Dead || o.Cause != CauseReported || o.Err != nil {
		t.Fatalf("liveness %v cause %v err %v: want Dead, reported, no read", o.Liveness, o.Cause, o.Err)
	}
	if d := o.Detail(); d != "pid 4242 exited with status 3 (exit reported by the kernel)" {
		t.Errorf("detail %q", d)
	}
}

// TestWatchedReadsNothing: a process whose pidfd the daemon holds, with
// no exit on it, is Alive (its identity verified when the pidfd opened)
// without a look at /proc.
func TestWatchedReadsNothing(t *testing.T) {
	h := &Host{ProcRoot: "/nonexistent"}
	at := time.Unix(1_800_000_000, 0)
	o := h.CheckPID(PIDSubject{PID: 4242, StartTime: at, Watched: true})
	if o.Liveness != Alive || !o.IdentityVerified() || o.Err != nil {
		t.Fatalf("liveness %v cause %v err %v: want Alive, verified, no read", o.Liveness, o.Cause, o.Err)
	}
	if d := o.Detail(); d != "pid 4242 alive (watched by its pidfd; start time 1800000000.00)" {
		t.Errorf("detail %q", d)
	}
}
