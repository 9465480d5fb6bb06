package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is a long-running program the bench measures (watchdog serve or
// monit), its output in a file of the run's directory.
type child struct {
	what string
	cmd  *exec.Cmd
	log  string        // the file its stdout and stderr go to
	done chan struct{} // closed once it has exited and been reaped
	err  error         // how it exited, once done is closed
}

// startChild runs argv with its output in logPath.
func startChild(what, logPath string, argv ...string) (*child, error) {
	return startChildAs(what, logPath, nil, "", argv...)
}

// startChildAs is startChild with process attributes (the user to run as,
// a signal on the driver's death; nil: none) in dir ("": the driver's).
func startChildAs(what, logPath string, attr *syscall.SysProcAttr, dir string, argv ...string) (*child, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", what, err)
	}
	c := &child{what: what, log: logPath, done: make(chan struct{})}
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Stdout, c.cmd.Stderr = out, out
	c.cmd.Env = cleanEnv()
	c.cmd.Dir = dir
	c.cmd.SysProcAttr = attr
	if err := c.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		out.Close()
		close(c.done)
	}()
	return c, nil
}

// cleanEnv is the driver's environment without what would steer watchdog
// elsewhere (WATCHDOG_DB, WATCHDOG_SERVER…) or make it talk to systemd.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "WATCHDOG_") || strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exited reports whether the child is gone, with a line saying how and the
// end of its log, for an error message.
func (c *child) exited() (bool, string) {
	select {
	case <-c.done:
		return true, fmt.Sprintf("%s exited (%v); the end of its log:\n%s", c.what, c.err, tail(c.log, 20))
	default:
		return false, ""
	}
}

// stop asks the child to end (SIGTERM) and kills it after grace.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may be gone already
	select {
	case <-c.done:
	case <-time.After(grace):
		c.cmd.Process.Kill() //nolint:errcheck // best effort
		<-c.done
	}
}

// tail is the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// idle is one measurement window over a settled child.
type idle struct {
	cpuMSPerS float64 // CPU time (user+system) per second of wall time, in ms
	ticks     int64   // the clock ticks it is counted from: its resolution
	rssKB     int64   // VmRSS at the end of the window
	hwmKB     int64   // VmHWM at the end of the window
	anonKB    int64   // RssAnon at the end of the window
	fileKB    int64   // RssFile at the end of the window
	load      string  // the 1-minute load average when the window began
	quiet     quiet   // writes, wake-ups and fsyncs (quiet.go)
}

// measureIdle reads the child's CPU ticks, writes and context switches
// at both ends of window, then counts its fsyncs over straceFor (none
// when 0) with strace attached.
func measureIdle(ctx context.Context, c *child, window time.Duration, clk int64, straceFor time.Duration) (idle, error) {
	load := loadAvg()
	u0, err := readUsage(c.pid())
	if err != nil {
		return idle{}, err
	}
	c0, err := readCounters(c.pid())
	if err != nil {
		return idle{}, err
	}
	t0 := time.Now()
	if err := sleepCtx(ctx, window); err != nil {
		return idle{}, err
	}
	c1, err := readCounters(c.pid())
	if err != nil {
		return idle{}, err
	}
	if gone, why := c.exited(); gone {
		return idle{}, fmt.Errorf("during the window: %s", why)
	}
	u1, err := readUsage(c.pid())
	if err != nil {
		return idle{}, err
	}
	elapsed := time.Since(t0)
	wall := elapsed.Seconds()
	cpu := float64(u1.ticks-u0.ticks) / float64(clk) // seconds
	q := quietCounters(c0, c1, elapsed)
	if straceFor > 0 {
		q.fsyncs, q.straceFor = countFsyncs(ctx, c.pid(), straceFor), straceFor
	}
	return idle{cpuMSPerS: cpu * 1000 / wall, ticks: u1.ticks - u0.ticks, rssKB: u1.rssKB, hwmKB: u1.hwmKB, anonKB: u1.anonKB, fileKB: u1.fileKB, load: load, quiet: q}, nil
}

// sleepCtx sleeps for d or until ctx ends, which is an error.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
