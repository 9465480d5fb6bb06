package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// monitConfig is monit's control file: a 1 s cycle, every file it keeps in
// dir, one `check process` per pidfile.
func monitConfig(dir string, f *fleet, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "set daemon 1\nset logfile %s\nset pidfile %s\nset idfile %s\nset statefile %s\n",
		filepath.Join(dir, "monit.log"), filepath.Join(dir, "monit.pid"),
		filepath.Join(dir, "monit.id"), filepath.Join(dir, "monit.state"))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "check process %s with pidfile %s\n", name(i), f.pidfile(i))
	}
	return b.String()
}

// startMonit runs monit in the foreground on p1…pn and waits until its log
// says it started.
func startMonit(ctx context.Context, bin, dir string, f *fleet, n int, timeout time.Duration) (*child, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("monit dir: %w", err)
	}
	rc := filepath.Join(dir, "monitrc")
	// monit refuses a control file others can read.
	if err := os.WriteFile(rc, []byte(monitConfig(dir, f, n)), 0o600); err != nil {
		return nil, fmt.Errorf("monit control file: %w", err)
	}
	c, err := startChild("monit", filepath.Join(dir, "monit.out"), bin, "-I", "-c", rc)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "monit.log")
	err = poll(ctx, timeout, 50*time.Millisecond, "monit to start", func() (bool, error) {
		if gone, why := c.exited(); gone {
			return false, fmt.Errorf("%s", why)
		}
		b, err := os.ReadFile(logPath)
		if err != nil {
			return false, nil // not written yet
		}
		return monitStarted.Match(b), nil
	})
	if err != nil {
		c.stop(5 * time.Second)
		return nil, fmt.Errorf("%w; the end of its log:\n%s", err, tail(logPath, 20))
	}
	return c, nil
}

// monitStarted is the line monit logs once its daemon runs
// ("'host' Monit 5.33.0 started").
var monitStarted = regexp.MustCompile(`Monit [0-9.]+ started`)

// monitDead matches monit's report that a checked process is gone:
// "'p7' process is not running", or "'p7' process with pid 123 is a
// zombie" should anything leave one unreaped.
var monitDead = regexp.MustCompile(`'(p[0-9]+)' process (?:is not running|with pid [0-9]+ is a zombie)`)

// monitDetector tails monit's log. monit stamps its lines to the second
// only, so the time of a report is when the line is read: the log is
// polled every 5 ms, which bounds what that adds.
type monitDetector struct {
	c      *child
	path   string
	off    int64
	seenAt map[string]time.Time // the first report of each name
	rest   string               // a line not yet complete
}

func newMonitDetector(c *child, dir string) *monitDetector {
	return &monitDetector{c: c, path: filepath.Join(dir, "monit.log"), seenAt: map[string]time.Time{}}
}

func (d *monitDetector) interval() time.Duration { return 5 * time.Millisecond }

func (d *monitDetector) poll(_ context.Context, pending []int) (map[int]time.Time, error) {
	if gone, why := d.c.exited(); gone {
		return nil, fmt.Errorf("%s", why)
	}
	now := time.Now()
	if err := d.read(now); err != nil {
		return nil, err
	}
	found := map[int]time.Time{}
	for _, i := range pending {
		if at, ok := d.seenAt[name(i)]; ok {
			found[i] = at
		}
	}
	return found, nil
}

// read takes in what the log gained since the last read.
func (d *monitDetector) read(now time.Time) error {
	f, err := os.Open(d.path)
	if err != nil {
		return fmt.Errorf("monit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(d.off, io.SeekStart); err != nil {
		return fmt.Errorf("monit log: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("monit log: %w", err)
	}
	d.off += int64(len(b))
	d.rest = scanMonitLog(d.rest+string(b), now, d.seenAt)
	return nil
}

// scanMonitLog records in seenAt, at now, each name a complete line of
// text reports dead (the first report only), and returns the incomplete
// last line, to be completed by the next read.
func scanMonitLog(text string, now time.Time, seenAt map[string]time.Time) string {
	lines := strings.Split(text, "\n")
	rest := lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		m := monitDead.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if _, ok := seenAt[m[1]]; !ok {
			seenAt[m[1]] = now
		}
	}
	return rest
}
