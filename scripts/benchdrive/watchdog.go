package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// watchdogd is a running `watchdog serve` on a database of its own, reached
// like any client: HTTP on 127.0.0.1, auth none.
type watchdogd struct {
	*child
	base string // http://127.0.0.1:PORT
	http *http.Client
}

// storeConf is the daemon's store section: driver "" is the default
// (SQLite), dsn "" a watchdog.db in the daemon's directory.
type storeConf struct {
	driver, dsn string
	// hostID is the daemon's host_id ("": the machine's).
	hostID string
}

// watchdogConfig is the daemon's config: its own database and a random
// loopback port, JSON logs (to find the port); everything else, the jobs'
// schedules above all, stays at the defaults being measured.
func watchdogConfig(st storeConf) string {
	driver := ""
	if st.driver != "" {
		driver = fmt.Sprintf("  driver: %s\n", st.driver)
	}
	host := ""
	if st.hostID != "" {
		host = fmt.Sprintf("host_id: %s\n", st.hostID)
	}
	jobs := ""
	if jobsEvery != "" {
		// The reconcilers as often as monit looks (-jobs-every 1s, issue 38).
		jobs = fmt.Sprintf("jobs:\n  sweep: \"@every %[1]s\"\n  enforce_terminal: \"@every %[1]s\"\n  reap_phantoms: \"@every %[1]s\"\n", jobsEvery)
	}
	return fmt.Sprintf("%sstore:\n%s  dsn: %q\nlisten: 127.0.0.1:0\nauth: none\nlog:\n  format: json\n%s", host, driver, st.dsn, jobs)
}

// jobsEvery is -jobs-every: the schedule of sweep, enforce_terminal and
// reap_phantoms ("": the defaults).
var jobsEvery string

// startWatchdog starts `bin serve` in dir on a new SQLite file there and
// waits until /readyz answers 200.
func startWatchdog(ctx context.Context, bin, dir string, timeout time.Duration) (*watchdogd, error) {
	return startWatchdogOn(ctx, bin, dir, storeConf{}, timeout)
}

// startWatchdogOn is startWatchdog on the store st.
func startWatchdogOn(ctx context.Context, bin, dir string, st storeConf, timeout time.Duration) (*watchdogd, error) {
	return startWatchdogUnder(ctx, nil, bin, dir, st, timeout)
}

// startWatchdogUnder is startWatchdogOn run through the command prefix
// (prlimit and its flags, say; nil: none), which must exec the binary so
// that the child's pid is the daemon's.
func startWatchdogUnder(ctx context.Context, prefix []string, bin, dir string, st storeConf, timeout time.Duration) (*watchdogd, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("daemon dir: %w", err)
	}
	if st.dsn == "" {
		st.dsn = filepath.Join(dir, "watchdog.db")
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(watchdogConfig(st)), 0o600); err != nil {
		return nil, fmt.Errorf("daemon config: %w", err)
	}
	argv := append(append([]string{}, prefix...), bin, "serve", "--config", cfg)
	c, err := startChild("watchdog serve", filepath.Join(dir, "daemon.log"), argv...)
	if err != nil {
		return nil, err
	}
	w := &watchdogd{child: c, http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64},
	}}
	err = poll(ctx, timeout, 50*time.Millisecond, "watchdog serve to be ready", func() (bool, error) {
		if gone, why := c.exited(); gone {
			return false, fmt.Errorf("%s", why)
		}
		if w.base == "" {
			addr, err := listenAddr(c.log)
			if err != nil || addr == "" {
				return false, err
			}
			w.base = "http://" + addr
		}
		resp, err := w.http.Get(w.base + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		c.stop(5 * time.Second)
		return nil, fmt.Errorf("%w; the end of its log:\n%s", err, tail(c.log, 20))
	}
	return w, nil
}

// listenAddr finds the "listening" line of the daemon's JSON log and
// returns its addr, "" while there is none.
func listenAddr(logPath string) (string, error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return "", fmt.Errorf("read daemon log: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" && l.Addr != "" {
			return l.Addr, nil
		}
	}
	return "", nil
}

// do sends one JSON request and decodes a 2xx answer into out (nil: discard).
func (w *watchdogd) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.base+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// registration is the part of the register document the bench sends.
type registration struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Lifecycle string `json:"lifecycle"`
	PID       int    `json:"pid,omitempty"`
	HostID    string `json:"host_id,omitempty"`
}

// registerFleet registers p1…pn as running sessions with their pids
// (the daemon fills in start time and boot id), from workers clients.
func (w *watchdogd) registerFleet(ctx context.Context, f *fleet, n, workers int) error {
	return parallel(ctx, n, workers, func(ctx context.Context, i int) error {
		return w.do(ctx, http.MethodPost, "/api/v1/entities",
			registration{Type: "session", ID: name(i), Lifecycle: "running", PID: f.pid(i)}, nil)
	})
}

// countSessions is how many sessions of the given severity the list holds
// (its total counts every page).
func (w *watchdogd) countSessions(ctx context.Context, severity string) (int, error) {
	var list struct {
		Total int `json:"total"`
	}
	q := url.Values{"type": {"session"}, "severity": {severity}, "limit": {"1"}}
	if err := w.do(ctx, http.MethodGet, "/api/v1/entities?"+q.Encode(), nil, &list); err != nil {
		return 0, err
	}
	return list.Total, nil
}

// waitJudged waits until n sessions read as running (severity info): the
// daemon has seen every process once, so the window that follows measures
// a settled daemon, not its first look. It returns how many it saw, and no
// error when timeout passes first: the caller says so and goes on.
func (w *watchdogd) waitJudged(ctx context.Context, n int, timeout time.Duration) (int, error) {
	seen := 0
	err := poll(ctx, timeout, 500*time.Millisecond, "", func() (bool, error) {
		if gone, why := w.exited(); gone {
			return false, fmt.Errorf("%s", why)
		}
		c, err := w.countSessions(ctx, "info")
		if err != nil {
			return false, err
		}
		seen = c
		return c >= n, nil
	})
	if errors.Is(err, errTimeout) {
		return seen, nil
	}
	return seen, err
}

// entityRead is the part of the entity read shape the bench looks at.
type entityRead struct {
	HealthSince float64 `json:"health_since"`
	State       struct {
		Health    string `json:"health"`
		Lifecycle string `json:"lifecycle"`
	} `json:"state"`
	Transitions []struct {
		To    string  `json:"to"`
		Actor string  `json:"actor"`
		At    float64 `json:"at"`
	} `json:"transitions"`
}

// enforcement waits until each killed session (fleet indexes) has been
// ended by the reaper and returns, for each, how long after its recorded
// death plus grace the terminal row came: what "enforcement at
// terminal_grace + ≤ 1 s" measures. A session not ended within timeout
// counts as missed.
func (w *watchdogd) enforcement(ctx context.Context, killed []int, grace, timeout time.Duration) (deaths, error) {
	d := deaths{killed: len(killed)}
	pending := map[int]bool{}
	for _, i := range killed {
		pending[i] = true
	}
	deadline := time.Now().Add(grace + timeout)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for i := range pending {
			var e entityRead
			if err := w.do(ctx, http.MethodGet, "/api/v1/entities/session/"+name(i), nil, &e); err != nil {
				return d, err
			}
			n := len(e.Transitions)
			if n == 0 || e.Transitions[n-1].Actor != "reaper" || e.HealthSince == 0 {
				continue
			}
			late := fromSeconds(e.Transitions[n-1].At).Sub(fromSeconds(e.HealthSince)) - grace
			d.latencies = append(d.latencies, late)
			delete(pending, i)
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return d, err
		}
	}
	d.missed = len(pending)
	return d, nil
}

// watchdogDetector reads each killed session until its health is
// process_dead and takes the daemon's own record of when it became so
// (health_since): the bench's polling rate does not enter the figure.
type watchdogDetector struct{ w *watchdogd }

func (d watchdogDetector) interval() time.Duration { return 100 * time.Millisecond }

func (d watchdogDetector) poll(ctx context.Context, pending []int) (map[int]time.Time, error) {
	if gone, why := d.w.exited(); gone {
		return nil, fmt.Errorf("%s", why)
	}
	found := map[int]time.Time{}
	for _, i := range pending {
		var e entityRead
		if err := d.w.do(ctx, http.MethodGet, "/api/v1/entities/session/"+name(i), nil, &e); err != nil {
			return nil, err
		}
		if e.State.Health == "process_dead" && e.HealthSince > 0 {
			found[i] = fromSeconds(e.HealthSince)
		}
	}
	return found, nil
}

func fromSeconds(s float64) time.Time {
	return time.UnixMicro(int64(s*1e6 + 0.5))
}

// throughput registers m pending sessions, then has clients move each of
// its own share pending → running at once, and returns transitions per
// second of wall time and the slowest request's p99.
func (w *watchdogd) throughput(ctx context.Context, m, clients int) (float64, time.Duration, error) {
	if _, err := w.registerSessions(ctx, 0, m, "pending", nil, clients); err != nil {
		return 0, 0, err
	}
	return w.moveSessions(ctx, span(0, m), "pending", "running", nil, clients)
}

// span is first, first+1, …, end-1.
func span(first, end int) []int {
	out := make([]int, 0, max(0, end-first))
	for i := first; i < end; i++ {
		out = append(out, i)
	}
	return out
}

// sessionID is the id of the i-th session of registerSessions.
func sessionID(i int) string { return fmt.Sprintf("t%d", i+1) }

// registerSessions registers sessions from…to-1 (no pid) in lifecycle,
// from clients, and returns registrations per second of wall time. host,
// when not nil, names the host_id of each ("": the daemon's own).
func (w *watchdogd) registerSessions(ctx context.Context, from, to int, lifecycle string, host func(int) string, clients int) (float64, error) {
	start := time.Now()
	err := parallel(ctx, to-from, clients, func(ctx context.Context, i int) error {
		r := registration{Type: "session", ID: sessionID(from + i), Lifecycle: lifecycle}
		if host != nil {
			r.HostID = host(from + i)
		}
		return w.do(ctx, http.MethodPost, "/api/v1/entities", r, nil)
	})
	if err != nil {
		return 0, fmt.Errorf("register: %w", err)
	}
	return float64(to-from) / time.Since(start).Seconds(), nil
}

// reason is a transition's reason.
type reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// moveSessions moves the sessions idx of registerSessions from → to (with
// expect_from, and why when not nil) from clients and returns transitions
// per second of wall time and the p99 of one request.
func (w *watchdogd) moveSessions(ctx context.Context, idx []int, from, to string, why *reason, clients int) (float64, time.Duration, error) {
	type move struct {
		To         string  `json:"to"`
		ExpectFrom string  `json:"expect_from"`
		Reason     *reason `json:"reason,omitempty"`
	}
	m := len(idx)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, m)
	start := time.Now()
	err := parallel(ctx, m, clients, func(ctx context.Context, i int) error {
		t := time.Now()
		err := w.do(ctx, http.MethodPost, "/api/v1/entities/session/"+sessionID(idx[i])+"/transitions", move{To: to, ExpectFrom: from, Reason: why}, nil)
		d := time.Since(t)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		return err
	})
	elapsed := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("transition: %w", err)
	}
	return float64(m) / elapsed.Seconds(), percentile(lat, 0.99), nil
}

// parallel calls fn for 0…n-1 from workers goroutines, worker k taking
// the indexes ≡ k mod workers (its own entities), and returns the first
// error, after which the others stop.
func parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n && ctx.Err() == nil; i += workers {
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx) // nil unless fn failed or the run was stopped
}

// pidfds counts the daemon's pidfds from /proc/PID/fd, without asking
// the daemon anything: a request (a scrape, a read) would sync its view
// and so hand it the registration sooner than it would find it alone.
func (w *watchdogd) pidfds() (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", w.cmd.Process.Pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", dir, err)
	}
	n := 0
	for _, e := range ents {
		if link, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.Contains(link, "pidfd") {
			n++
		}
	}
	return n, nil
}

// adoption registers the fleet's processes from..from+k-1 one at a time
// and, for each, how long after the registration was acknowledged the
// daemon held a pidfd for it (its pidfd count went up by one): "a CLI
// registration is watched within 1 s". It looks every 5 ms, and sends the
// daemon nothing meanwhile, so the daemon finds the registration through
// its own change feed, as it would a CLI's.
func (w *watchdogd) adoption(ctx context.Context, f *fleet, from, k int, timeout time.Duration) (deaths, error) {
	d := deaths{killed: k}
	for i := from; i < from+k; i++ {
		before, err := w.pidfds()
		if err != nil {
			return d, err
		}
		if err := w.do(ctx, http.MethodPost, "/api/v1/entities",
			registration{Type: "session", ID: name(i), Lifecycle: "running", PID: f.pid(i)}, nil); err != nil {
			return d, err
		}
		acked := time.Now()
		seen := false
		for time.Since(acked) < timeout {
			n, err := w.pidfds()
			if err != nil {
				return d, err
			}
			if n > before {
				d.latencies = append(d.latencies, time.Since(acked))
				seen = true
				break
			}
			if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
				return d, err
			}
		}
		if !seen {
			d.missed++
		}
	}
	return d, nil
}
