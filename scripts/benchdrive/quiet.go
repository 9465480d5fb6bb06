package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// quiet is what a watcher did while nothing changed, besides its CPU
// (issue "quiet when nothing happens"): its writes and its wake-ups over
// the idle window, and its fsyncs over a window of their own.
type quiet struct {
	writeBytes int64   // /proc/PID/io write_bytes over the window: bytes sent to the disk
	syscw      int64   // /proc/PID/io syscw over the window: write(2)-family calls
	volCSPerS  float64 // voluntary context switches per second, summed over the threads
	fsyncs     int64   // fsync + fdatasync over the strace window; -1: not measured
	straceFor  time.Duration
}

// counters are the cumulative figures quiet is the difference of.
type counters struct {
	writeBytes, syscw, volCS int64
}

// readCounters reads /proc/PID/io and every thread's voluntary context
// switches (/proc/PID/task/*/status).
func readCounters(pid int) (counters, error) {
	var c counters
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return c, fmt.Errorf("read io of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(io), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "write_bytes":
			c.writeBytes = n
		case "syscw":
			c.syscw = n
		}
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil {
		return c, err
	}
	for _, t := range tasks {
		f, err := os.Open(t)
		if err != nil {
			continue // a thread gone since
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if v, ok := strings.CutPrefix(s.Text(), "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				c.volCS += n
			}
		}
		f.Close()
	}
	return c, nil
}

// quietCounters is the quiet figures of the counters c and d read wall
// apart (beside measureIdle's CPU); the fsyncs are counted after, in a
// window of their own (countFsyncs): ptrace stops the threads at every
// system call, which would count in the CPU and the switches.
func quietCounters(c counters, d counters, wall time.Duration) quiet {
	return quiet{
		writeBytes: d.writeBytes - c.writeBytes,
		syscw:      d.syscw - c.syscw,
		volCSPerS:  float64(d.volCS-c.volCS) / wall.Seconds(),
		fsyncs:     -1,
	}
}

var straceTotal = regexp.MustCompile(`(?m)^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total\s*$`)

// countFsyncs attaches strace to pid for window and counts its fsync and
// fdatasync calls; -1 when strace is missing or fails.
func countFsyncs(ctx context.Context, pid int, window time.Duration) int64 {
	bin, err := exec.LookPath("strace")
	if err != nil {
		return -1
	}
	tctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	cmd := exec.CommandContext(tctx, bin, "-f", "-c", "-e", "trace=fsync,fdatasync", "-p", strconv.Itoa(pid))
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) } // strace prints its summary on SIGINT
	cmd.WaitDelay = 5 * time.Second
	out, _ := cmd.CombinedOutput()
	if m := straceTotal.FindSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		return n
	}
	if strings.Contains(string(out), "% time") || strings.Contains(string(out), "detached") {
		return 0 // detached with a summary of no call, or none at all
	}
	return -1
}
