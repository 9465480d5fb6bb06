package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fleet is the bench's watched processes: `sleep 100000`, named p1, p2, …,
// each with a pidfile (monit reads those; watchdog gets the pid over HTTP).
//
// They are started with fork/exec rather than os/exec: os/exec holds a
// pidfd per child, and 10,000 of them would eat the driver's file limit.
// They stay in the driver's process group, so the one kill the script's
// trap sends to that group ends them even if the driver itself dies.
type fleet struct {
	dir   string // the pidfiles
	sleep string // the sleep binary's path

	mu   sync.Mutex
	pids []int // pids[i] is p(i+1); 0 when dead (killed and reaped)
}

func newFleet(dir string) (*fleet, error) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return nil, fmt.Errorf("find sleep: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pidfile dir: %w", err)
	}
	return &fleet{dir: dir, sleep: sleep}, nil
}

// name is the entity id and the monit service name of the i-th process.
func name(i int) string { return "p" + strconv.Itoa(i+1) }

func (f *fleet) pidfile(i int) string { return filepath.Join(f.dir, name(i)+".pid") }

// ensure makes p1…pn alive: it starts the ones never started and replaces
// the ones killed (a new pid, the pidfile rewritten).
func (f *fleet) ensure(n int) error {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer null.Close()
	fds := []uintptr{null.Fd(), null.Fd(), null.Fd()}
	for i := 0; i < n; i++ {
		f.mu.Lock()
		if i < len(f.pids) && f.pids[i] != 0 {
			f.mu.Unlock()
			continue
		}
		pid, err := syscall.ForkExec(f.sleep, []string{"sleep", "100000"}, &syscall.ProcAttr{Files: fds})
		if err != nil {
			f.mu.Unlock()
			return fmt.Errorf("start %s (%d of %d): %w", name(i), i+1, n, err)
		}
		for len(f.pids) <= i {
			f.pids = append(f.pids, 0)
		}
		f.pids[i] = pid
		f.mu.Unlock()
		if err := os.WriteFile(f.pidfile(i), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			return fmt.Errorf("pidfile of %s: %w", name(i), err)
		}
	}
	return nil
}

// pid is the current pid of the i-th process, 0 when it is dead.
func (f *fleet) pid(i int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.pids) {
		return 0
	}
	return f.pids[i]
}

// kill sends SIGKILL to the i-th process and reaps it at once, so that
// nobody watching sees a zombie, and returns the time just before the
// signal: the start of every latency.
func (f *fleet) kill(i int) (time.Time, error) {
	pid := f.pid(i)
	if pid == 0 {
		return time.Time{}, fmt.Errorf("%s is not running", name(i))
	}
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return at, fmt.Errorf("kill %s (pid %d): %w", name(i), pid, err)
	}
	if err := reap(pid); err != nil {
		return at, fmt.Errorf("reap %s (pid %d): %w", name(i), pid, err)
	}
	f.mu.Lock()
	f.pids[i] = 0
	f.mu.Unlock()
	return at, nil
}

// stopAll kills and reaps every process still alive.
func (f *fleet) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pid := range f.pids {
		if pid != 0 {
			syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // gone already is fine
		}
	}
	for i, pid := range f.pids {
		if pid != 0 {
			reap(pid) //nolint:errcheck // best effort at cleanup
			f.pids[i] = 0
		}
	}
}

func reap(pid int) error {
	for {
		_, err := syscall.Wait4(pid, nil, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		return err
	}
}

// usage is what /proc says a process has used so far.
type usage struct {
	ticks int64 // utime + stime, in clock ticks
	rssKB int64 // VmRSS
	hwmKB int64 // VmHWM, the peak RSS
	// anonKB and fileKB split VmRSS: the heap, stacks and C allocations
	// against the mapped pages of the binary and its libraries, which a
	// freshly built binary keeps resident from the page cache.
	anonKB, fileKB int64
}

// readUsage reads /proc/PID/stat and /proc/PID/status.
func readUsage(pid int) (usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return usage{}, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	ticks, err := parseStatTicks(stat)
	if err != nil {
		return usage{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return usage{}, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	u := usage{ticks: ticks}
	u.rssKB, u.hwmKB = statusKB(status, "VmRSS:"), statusKB(status, "VmHWM:")
	u.anonKB, u.fileKB = statusKB(status, "RssAnon:"), statusKB(status, "RssFile:")
	return u, nil
}

// parseStatTicks returns utime+stime (fields 14 and 15 of proc(5)'s
// stat). The command name (field 2) is in parentheses and may hold spaces
// or parentheses itself, so the fields are counted from the last ')'.
func parseStatTicks(stat []byte) (int64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("stat: no command name")
	}
	fields := strings.Fields(string(stat[end+1:]))
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(fields))
	}
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat utime: %w", err)
	}
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat stime: %w", err)
	}
	return utime + stime, nil
}

// statusKB is the kB figure of a /proc/PID/status line ("VmRSS:  1234 kB"),
// 0 when the line is missing.
func statusKB(status []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		v, _ := strconv.ParseInt(f[0], 10, 64)
		return v
	}
	return 0
}

// clockTicks is CLK_TCK as getconf says, 100 (Linux's USER_HZ) if it cannot.
func clockTicks() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 100
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || v <= 0 {
		return 100
	}
	return v
}

// loadAvg is the first field of /proc/loadavg, "?" when unreadable: printed
// beside each window so a reader can tell a quiet machine from a busy one.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
