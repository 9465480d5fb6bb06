package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The fdlimit part (issue "bounded when everything does", ADR-0037): the
// fd budget at the scale. The daemon runs under
// `prlimit --nofile=-fdlimit-nofile` (soft and hard alike, as a unit's
// LimitNOFILE sets them) and is given -fdlimit-n live processes over the
// API, each with its pid and its start time, as `watchdog register
// --server` sends them: far more than it has descriptors. Then, in this
// order:
//
//  1. registration errors, /readyz every 100 ms from the first
//     registration until every process has been watched for a while, the
//     watched_processes gauge by mode, the pidfds and fds it holds;
//  2. the store really fails while every process is alive and the budget
//     spent: its file system (a tmpfs the driver mounts, when it may)
//     filled to ENOSPC, the time until /readyz answers 503 (the contract:
//     a full or read-only disk within 2 s), then space freed and the time
//     until it is ready again, without a restart;
//  3. every process killed at once: how many are recorded dead, and kill
//     → health_since for those the daemon held a pidfd of and for the
//     polled ones apart; /readyz again;
//  4. the database files removed: the time until /readyz answers 503 (a
//     deleted or replaced database within 5 s); the daemon is not ready
//     until a restart after that, so this comes last.
//
// At the end, the lines of the daemon's log that say "too many open
// files".

// fdlimitFigures are the part's figures.
type fdlimitFigures struct {
	n      int
	nofile string // "soft/hard" from /proc/PID/limits
	budget string // the daemon's "file descriptor budget" line's shares
	load   string // the load average when the part began

	regOK, regFailed int
	regFirstErr      string
	regRate          float64 // registrations per second
	readyDuring      reqFigures

	pidfdMode, pollMode int // watchdog_watched_processes{mode}
	heldPidfds          int // pidfds in /proc/PID/fd
	openFDs             int // every fd in /proc/PID/fd, with every process watched

	full     failCase // the disk filled
	recover  failCase // space freed: ready again
	byPidfd  deaths   // kill → health_since, processes watched by pidfd
	byPoll   deaths   // the same, polled ones
	overflow string   // watchdog_pidwatch_overflow_total after the deaths
	readyAft reqFigures
	deleted  failCase // the database files removed

	killSpan time.Duration // from the first kill to the last one's reaping

	tooMany int // daemon log lines saying "too many open files"
}

// failCase is how long /readyz took to answer as wanted after a change.
type failCase struct {
	ran  bool
	took time.Duration
	seen bool   // it answered as wanted within the ceiling
	note string // why not measured, or what it said
}

// fdlimitFlags are the part's flags.
func fdlimitFlags(fs interface {
	IntVar(p *int, name string, value int, usage string)
}, o *options) {
	fs.IntVar(&o.fdlimitN, "fdlimit-n", 5000, "live processes registered with the daemon in the fdlimit part")
	fs.IntVar(&o.fdlimitNofile, "fdlimit-nofile", 1024, "the daemon's file-descriptor limit in the fdlimit part (prlimit --nofile, soft and hard)")
}

// checkFdlimit checks the part's flags.
func checkFdlimit(o options) error {
	if o.fdlimitN < 1 {
		return fmt.Errorf("-fdlimit-n: %d is not a positive number", o.fdlimitN)
	}
	if o.fdlimitNofile < 64 {
		return fmt.Errorf("-fdlimit-nofile: %d is below 64, the daemon's own reserve", o.fdlimitNofile)
	}
	return nil
}

// Ceilings of the part's waits: how long before a figure counts as not
// reached. Generous: a loaded machine is slow, and the figures say how
// long it took.
const (
	fdWatchCeiling = 3 * time.Minute  // every process counted by the gauge
	fdReadyCeiling = 30 * time.Second // /readyz turning 503, or 200 again
	fdTmpfsSize    = "128m"           // the store's file system, when mounted
)

// fdlimit runs the part.
func (r *runner) fdlimit(ctx context.Context) error {
	n := r.o.fdlimitN
	f := &fdlimitFigures{n: n, load: loadAvg()}
	r.res.fdlimit = f
	say("fdlimit: starting %d processes", n)
	if err := r.fleet.ensure(n); err != nil {
		return err
	}
	defer r.fleet.stopAll()

	// The store on a small tmpfs of its own, so that it can be filled;
	// where mounting is refused (not root), on the run's directory, and
	// the full-disk case is not measured.
	dir := filepath.Join(r.dir, "wd-fdlimit")
	storeDir := filepath.Join(dir, "store")
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		return fmt.Errorf("fdlimit: %w", err)
	}
	mounted := false
	if err := syscall.Mount("watchdog-bench", storeDir, "tmpfs", 0, "size="+fdTmpfsSize+",mode=0755"); err != nil {
		f.full.note = fmt.Sprintf("not measured: mounting a tmpfs for the store was refused (%v); run as root", err)
	} else {
		mounted = true
		defer func() {
			if err := syscall.Unmount(storeDir, syscall.MNT_DETACH); err != nil {
				say("fdlimit: unmount %s: %v", storeDir, err)
			}
		}()
	}
	db := filepath.Join(storeDir, "watchdog.db")

	prefix := []string{"prlimit", "--nofile=" + strconv.Itoa(r.o.fdlimitNofile), "--"}
	w, err := startWatchdogUnder(ctx, prefix, r.o.watchdog, dir, storeConf{dsn: db}, time.Minute)
	if err != nil {
		return fmt.Errorf("fdlimit: %w", err)
	}
	r.live = append(r.live, w.child)
	defer w.stop(10 * time.Second) // before the unmount: deferred later, run sooner
	pid := w.pid()
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid)); err == nil {
		f.nofile = nofileLimit(string(b))
	}
	if b, err := os.ReadFile(w.log); err == nil {
		f.budget = budgetLine(b)
	}

	// 1. Registration, /readyz sampled throughout.
	sampling, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() { sampleReadyz(sampling, w.base, &f.readyDuring) })
	say("fdlimit: registering %d live processes with pid and start time (nofile %d)", n, r.o.fdlimitNofile)
	bt, err := bootTime()
	if err != nil {
		stopSampling()
		return fmt.Errorf("fdlimit: %w", err)
	}
	var mu sync.Mutex
	t0 := time.Now()
	err = parallel(ctx, n, r.o.clients, func(ctx context.Context, i int) error {
		reg := fdRegistration{Type: "session", ID: name(i), Lifecycle: "running", PID: r.fleet.pid(i)}
		if st, err := startTime(reg.PID, bt, r.clk); err == nil {
			reg.PIDStartTime = st
		}
		err := w.do(ctx, http.MethodPost, "/api/v1/entities", reg, nil)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			f.regFailed++
			if f.regFirstErr == "" {
				f.regFirstErr = err.Error()
			}
		} else {
			f.regOK++
		}
		return ctx.Err()
	})
	f.regRate = float64(n) / time.Since(t0).Seconds()
	if err != nil {
		stopSampling()
		return fmt.Errorf("fdlimit: register: %w", err)
	}
	say("fdlimit: %d registered, %d failed; waiting until the daemon watches every one", f.regOK, f.regFailed)
	err = poll(ctx, fdWatchCeiling, 500*time.Millisecond, "", func() (bool, error) {
		if gone, why := w.exited(); gone {
			return false, errors.New(why)
		}
		m, err := w.gauge("watchdog_watched_processes")
		if err != nil {
			return false, err
		}
		f.pidfdMode, f.pollMode = int(m["pidfd"]), int(m["poll"])
		return f.pidfdMode+f.pollMode >= f.regOK, nil
	})
	if err != nil && !errors.Is(err, errTimeout) {
		stopSampling()
		return fmt.Errorf("fdlimit: %w", err)
	}
	// A settled spell, still sampled: the watcher at its cap, the monitor
	// polling the rest.
	if err := sleepCtx(ctx, r.o.settle); err != nil {
		stopSampling()
		return err
	}
	stopSampling()
	sampler.Wait()
	held, err := pidfdPids(pid)
	if err != nil {
		return fmt.Errorf("fdlimit: %w", err)
	}
	f.heldPidfds = len(held)
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		f.openFDs = len(ents)
	}
	say("fdlimit: watched by pidfd %d, polled %d; %d fds open of %s", f.pidfdMode, f.pollMode, f.openFDs, f.nofile)

	// 2. The disk fills while every process lives.
	if mounted {
		say("fdlimit: filling the store's file system")
		if f.full, err = fillUntilNotReady(ctx, w.base, storeDir); err != nil {
			return fmt.Errorf("fdlimit: full disk: %w", err)
		}
		say("fdlimit: /readyz 503 %s after the disk filled; freeing it", f.full.took.Round(time.Millisecond))
		t := time.Now()
		if err := os.Remove(filepath.Join(storeDir, "filler")); err != nil {
			return fmt.Errorf("fdlimit: %w", err)
		}
		f.recover = waitReadyz(ctx, w.base, http.StatusOK, t)
	}

	// 3. Every process killed at once.
	say("fdlimit: killing all %d", n)
	killedAt := make([]time.Time, n)
	byPidfd := make([]bool, n) // by fleet index, before the pids go
	for i := range n {
		p := r.fleet.pid(i)
		if p == 0 {
			continue
		}
		byPidfd[i] = held[p]
		at, err := r.fleet.kill(i)
		if err != nil {
			return fmt.Errorf("fdlimit: %w", err)
		}
		killedAt[i] = at
	}
	if first := slices.IndexFunc(killedAt, func(t time.Time) bool { return !t.IsZero() }); first >= 0 {
		f.killSpan = time.Since(killedAt[first])
	}
	if err := w.detectAll(ctx, killedAt, byPidfd, r.o.detectTimeout, f); err != nil {
		return fmt.Errorf("fdlimit: deaths: %w", err)
	}
	if v, err := w.gauge("watchdog_pidwatch_overflow_total"); err == nil {
		f.overflow = fmt.Sprint(v[""])
	}
	aft, stopAfter := context.WithTimeout(ctx, 3*time.Second)
	sampleReadyz(aft, w.base, &f.readyAft)
	stopAfter()

	// 4. The database deleted.
	say("fdlimit: removing the database files")
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(db + s); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("fdlimit: %w", err)
		}
	}
	f.deleted = waitReadyz(ctx, w.base, http.StatusServiceUnavailable, time.Now())

	if b, err := os.ReadFile(w.log); err == nil {
		f.tooMany = countTooMany(b)
	}
	return nil
}

// fdRegistration is the register document with the process's start time,
// as `watchdog register --server` sends it.
type fdRegistration struct {
	Type         string  `json:"type"`
	ID           string  `json:"id"`
	Lifecycle    string  `json:"lifecycle"`
	PID          int     `json:"pid"`
	PIDStartTime float64 `json:"pid_start_time,omitempty"`
}

// sampleReadyz asks /readyz every 100 ms, each on a new connection, until
// ctx ends.
func sampleReadyz(ctx context.Context, base string, out *reqFigures) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		d, code, err := timedRequest(context.Background(), http.MethodGet, base+"/readyz", nil, 5*time.Second)
		if ctx.Err() != nil {
			return
		}
		out.add(d, code, err, 5*time.Second)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitReadyz asks /readyz every 20 ms until it answers want, and returns
// how long after since it first did (fdReadyCeiling at most).
func waitReadyz(ctx context.Context, base string, want int, since time.Time) failCase {
	c := failCase{ran: true}
	for time.Since(since) < fdReadyCeiling && ctx.Err() == nil {
		_, code, err := timedRequest(ctx, http.MethodGet, base+"/readyz", nil, 5*time.Second)
		if err == nil && code == want {
			c.took, c.seen = max(0, time.Since(since)), true
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.took = time.Since(since)
	return c
}

// fillUntilNotReady fills dir's file system with one file until a write
// fails with ENOSPC, then waits for /readyz to answer 503. A 503 seen
// while the file was still growing (the daemon's reserve: not ready below
// 1 MiB free) counts as 0.
func fillUntilNotReady(ctx context.Context, base, dir string) (failCase, error) {
	done := make(chan failCase, 1)
	full := make(chan time.Time, 1)
	watch, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		var fullAt time.Time
		for watch.Err() == nil {
			_, code, err := timedRequest(watch, http.MethodGet, base+"/readyz", nil, 5*time.Second)
			select {
			case fullAt = <-full:
			default:
			}
			if err == nil && code == http.StatusServiceUnavailable {
				c := failCase{ran: true, seen: true}
				if !fullAt.IsZero() {
					c.took = max(0, time.Since(fullAt))
				}
				done <- c
				return
			}
			if !fullAt.IsZero() && time.Since(fullAt) > fdReadyCeiling {
				done <- failCase{ran: true, took: time.Since(fullAt)}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		done <- failCase{ran: true, note: "stopped"}
	}()
	fh, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		return failCase{}, err
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := fh.Write(chunk); err != nil {
			fh.Close()
			if !errors.Is(err, syscall.ENOSPC) {
				return failCase{}, fmt.Errorf("fill: %w", err)
			}
			break
		}
	}
	full <- time.Now()
	select {
	case c := <-done:
		return c, nil
	case <-ctx.Done():
		return failCase{}, ctx.Err()
	}
}

// detectAll reads every session from the list until each killed one
// (killedAt non-zero) reads process_dead, or timeout has passed since the
// last kill, and files kill → health_since under pidfd when the daemon
// held a pidfd of its pid before the kill (byPidfd), else under poll.
func (w *watchdogd) detectAll(ctx context.Context, killedAt []time.Time, byPidfd []bool, timeout time.Duration, f *fdlimitFigures) error {
	type victim struct {
		at    time.Time
		pidfd bool
	}
	pending := map[string]victim{}
	last := time.Time{}
	for i, at := range killedAt {
		if at.IsZero() {
			continue
		}
		pending[name(i)] = victim{at: at, pidfd: byPidfd[i]}
		if at.After(last) {
			last = at
		}
	}
	for _, v := range pending {
		if v.pidfd {
			f.byPidfd.killed++
		} else {
			f.byPoll.killed++
		}
	}
	for len(pending) > 0 && time.Since(last) < timeout {
		if gone, why := w.exited(); gone {
			return errors.New(why)
		}
		items, err := w.listSessions(ctx)
		if err != nil {
			return err
		}
		for id, since := range deadSince(items) {
			v, ok := pending[id]
			if !ok {
				continue
			}
			d := since.Sub(v.at)
			if v.pidfd {
				f.byPidfd.latencies = append(f.byPidfd.latencies, d)
			} else {
				f.byPoll.latencies = append(f.byPoll.latencies, d)
			}
			delete(pending, id)
		}
		if len(pending) > 0 {
			if err := sleepCtx(ctx, time.Second); err != nil {
				return err
			}
		}
	}
	for _, v := range pending {
		if v.pidfd {
			f.byPidfd.missed++
		} else {
			f.byPoll.missed++
		}
	}
	return nil
}

// listItem is the part of a list item the part reads.
type listItem struct {
	ID          string  `json:"id"`
	HealthSince float64 `json:"health_since"`
	State       struct {
		Health    string `json:"health"`
		Lifecycle string `json:"lifecycle"`
	} `json:"state"`
}

// listSessions reads every session, page by page (order=id walks each
// once).
func (w *watchdogd) listSessions(ctx context.Context) ([]listItem, error) {
	var all []listItem
	after := ""
	for {
		q := url.Values{"type": {"session"}, "order": {"id"}, "limit": {"5000"}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Items []listItem `json:"items"`
			Next  string     `json:"next"`
		}
		if err := w.do(ctx, http.MethodGet, "/api/v1/entities?"+q.Encode(), nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Items...)
		if page.Next == "" {
			return all, nil
		}
		after = page.Next
	}
}

// deadSince is, for each item recorded dead, when the daemon recorded it:
// health process_dead, or a lifecycle the reaper ended after the death
// (terminal_grace later), with its health_since.
func deadSince(items []listItem) map[string]time.Time {
	out := map[string]time.Time{}
	for _, it := range items {
		if it.HealthSince <= 0 {
			continue
		}
		if it.State.Health == "process_dead" || (it.State.Lifecycle != "" && it.State.Lifecycle != "running") {
			out[it.ID] = fromSeconds(it.HealthSince)
		}
	}
	return out
}

// gauge reads one metric family from /metrics: each series' value by the
// value of its one label ("" for a series with none).
func (w *watchdogd) gauge(family string) (map[string]float64, error) {
	resp, err := w.http.Get(w.base + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	m := metricValues(b, family)
	if len(m) == 0 {
		return nil, fmt.Errorf("scrape: no %s", family)
	}
	return m, nil
}

// metricValues parses the exposition text for family's series: value by
// the value of the series' first label ("" when it has none). Comments
// and other families are skipped; a value that is not a number too.
func metricValues(exposition []byte, family string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, family)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		label := ""
		if rest[0] == '{' {
			labels, after, ok := strings.Cut(rest[1:], "}")
			if !ok {
				continue
			}
			if _, v, ok := strings.Cut(labels, "="); ok {
				v, _, _ = strings.Cut(v, ",")
				label = strings.Trim(v, `"`)
			}
			rest = after
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out[label] = v
	}
	return out
}

// pidfdPids is the set of pids pid holds a pidfd of (fdinfo's "Pid:"
// line of each anon_inode:[pidfd]), read from /proc without asking the
// daemon anything.
func pidfdPids(pid int) (map[int]bool, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	out := map[int]bool{}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.Contains(link, "pidfd") {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if p, ok := fdinfoPid(info); ok {
			out[p] = true
		}
	}
	return out, nil
}

// fdinfoPid is the "Pid:" of a pidfd's fdinfo (-1 once the process is
// reaped, which is no pid).
func fdinfoPid(info []byte) (int, bool) {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Pid:"); ok {
			p, err := strconv.Atoi(strings.TrimSpace(rest))
			return p, err == nil && p > 0
		}
	}
	return 0, false
}

// nofileLimit is "soft/hard" of /proc/PID/limits' "Max open files".
func nofileLimit(limits string) string {
	for _, l := range strings.Split(limits, "\n") {
		if rest, ok := strings.CutPrefix(l, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				return f[0] + "/" + f[1]
			}
		}
	}
	return "?"
}

// budgetLine is the shares of the daemon's "file descriptor budget" log
// line ("limit 1024: own 64, connections 480, pidfds 480"), "" when
// there is none.
func budgetLine(log []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"file descriptor budget"`)) {
			continue
		}
		field := func(k string) string {
			_, rest, ok := bytes.Cut(line, []byte(`"`+k+`":`))
			if !ok {
				return "?"
			}
			end := bytes.IndexAny(rest, ",}")
			if end < 0 {
				return "?"
			}
			return string(rest[:end])
		}
		return fmt.Sprintf("limit %s: own %s, connections %s, pidfds %s",
			field("fd_limit"), field("reserved_own"), field("reserved_connections"), field("pidfd_cap"))
	}
	return ""
}

// countTooMany counts the log's lines that say "too many open files"
// (EMFILE's text, as Go and SQLite print it), in any case.
func countTooMany(log []byte) int {
	n := 0
	for _, l := range bytes.Split(bytes.ToLower(log), []byte("\n")) {
		if bytes.Contains(l, []byte("too many open files")) {
			n++
		}
	}
	return n
}

// bootTime is the btime of /proc/stat, in seconds since the epoch.
func bootTime() (int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "btime "); ok {
			return strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		}
	}
	return 0, errors.New("/proc/stat: no btime")
}

// startTime is when pid started, in seconds since the epoch: btime plus
// field 22 of its stat (clock ticks after boot), as the CLI computes it.
func startTime(pid int, btime, clk int64) (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	ticks, err := parseStartTicks(stat)
	if err != nil {
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	return float64(btime) + float64(ticks)/float64(clk), nil
}

// parseStartTicks is field 22 of proc(5)'s stat, counted from the last
// ')' as parseStatTicks does.
func parseStartTicks(stat []byte) (int64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("stat: no command name")
	}
	fields := strings.Fields(string(stat[end+1:]))
	// fields[0] is field 3: starttime, field 22, is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 20", len(fields))
	}
	v, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat starttime: %w", err)
	}
	return v, nil
}

// fdlimitRows are the part's table: figure, target, met.
func fdlimitRows(f *fdlimitFigures) []row {
	rd := func(r reqFigures) string {
		return fmt.Sprintf("%d/%d", r.ok, r.n)
	}
	allOK := func(r reqFigures) bool { return r.n > 0 && r.ok == r.n }
	rows := []row{
		{what: "registrations failed", wd: fmt.Sprintf("%d of %d (%.0f/s)", f.regFailed, f.n, f.regRate), target: "0", met: yes(f.regFailed == 0 && f.regOK == f.n)},
		{what: "/readyz 200, registering and watching", wd: rd(f.readyDuring), target: "all", met: yes(allOK(f.readyDuring))},
		{what: "watched by pidfd / polled (gauge)", wd: fmt.Sprintf("%d / %d", f.pidfdMode, f.pollMode), target: fmt.Sprintf("sum %d", f.regOK), met: yes(f.regOK > 0 && f.pidfdMode+f.pollMode == f.regOK)},
		{what: "  pidfds held, fds open (/proc)", wd: fmt.Sprintf("%d, %d of %s", f.heldPidfds, f.openFDs, f.nofile)},
	}
	if f.full.ran {
		rows = append(rows,
			failRow("disk full → /readyz 503", f.full, 2*time.Second),
			row{what: "  space freed → /readyz 200", wd: failTook(f.recover), target: "no restart", met: yes(f.recover.seen)})
	} else {
		rows = append(rows, row{what: "disk full → /readyz 503", wd: f.full.note, target: "≤ 2 s", met: "-"})
	}
	// The delays' bounds: a death by pidfd as issue 13's p99 of one death;
	// a polled one within the monitor's poll interval (ADR-0037: "seen up
	// to 5 s late"), the recording of a burst of them included.
	for _, x := range []struct {
		mode, target string
		d            deaths
		bound        time.Duration
	}{{"pidfd", "p99 ≤ 200 ms", f.byPidfd, 200 * time.Millisecond}, {"polled", "p99 ≤ 5 s", f.byPoll, 5 * time.Second}} {
		if x.d.killed == 0 {
			rows = append(rows, row{what: "deaths recorded, " + x.mode, wd: "none " + x.mode})
			continue
		}
		rows = append(rows,
			row{what: "deaths recorded, " + x.mode, wd: fmt.Sprintf("%d/%d", len(x.d.latencies), x.d.killed), target: "all", met: yes(x.d.missed == 0 && len(x.d.latencies) == x.d.killed)},
			row{what: "  kill → recorded (" + x.mode + "), median / p99", wd: deathSpread(x.d), target: x.target, met: yes(len(x.d.latencies) > 0 && x.d.p99() <= x.bound)})
	}
	rows = append(rows,
		row{what: "/readyz 200 after the deaths", wd: rd(f.readyAft), target: "all", met: yes(allOK(f.readyAft))},
		failRow("database deleted → /readyz 503", f.deleted, 5*time.Second),
		row{what: `log lines "too many open files"`, wd: strconv.Itoa(f.tooMany), target: "0", met: yes(f.tooMany == 0)},
	)
	return rows
}

// failRow is a store failure's row against its bound.
func failRow(what string, c failCase, bound time.Duration) row {
	return row{what: what, wd: failTook(c), target: fmt.Sprintf("≤ %.0f s", bound.Seconds()), met: yes(c.ran && c.seen && c.took <= bound)}
}

func failTook(c failCase) string {
	switch {
	case !c.ran:
		return "not measured"
	case !c.seen:
		return "not within " + c.took.Round(time.Second).String()
	}
	return ms(c.took)
}

func deathSpread(d deaths) string {
	if len(d.latencies) == 0 {
		return "-"
	}
	return ms(d.median()) + " / " + ms(d.p99())
}

// printFdlimit prints the part's table.
func (res *results) printFdlimit(w io.Writer, o options) {
	f := res.fdlimit
	if f == nil {
		return
	}
	fmt.Fprintf(w, "\nfdlimit: watchdog serve under prlimit --nofile=%d (read back: %s), %d live processes registered over the API with pid and start time\n"+
		"(%d clients); budget: %s; load average %s when the part began\n", o.fdlimitNofile, f.nofile, f.n, o.clients, dash(f.budget), f.load)
	tw := newTable(w)
	fmt.Fprintln(tw, "measurement\tfigure\ttarget\tmet")
	for _, r := range fdlimitRows(f) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.what, dash(r.wd), dash(r.target), dash(r.met))
	}
	tw.Flush() //nolint:errcheck // stdout
	if f.regFirstErr != "" {
		fmt.Fprintf(w, "  first registration failure: %s\n", f.regFirstErr)
	}
	for _, x := range []struct {
		what string
		r    reqFigures
	}{{"registering", f.readyDuring}, {"after the deaths", f.readyAft}} {
		if x.r.firstErr != "" {
			fmt.Fprintf(w, "  /readyz %s: first failure: %s\n", x.what, x.r.firstErr)
		}
	}
	if f.overflow != "" {
		fmt.Fprintf(w, "  watchdog_pidwatch_overflow_total after the deaths: %s\n", f.overflow)
	}
	fmt.Fprintf(w, "  the %d kills (SIGKILL, each reaped at once) took %s\n", f.byPidfd.killed+f.byPoll.killed, f.killSpan.Round(time.Millisecond))
	fmt.Fprintln(w, "  every process killed at once (SIGKILL, reaped); recorded = the entity's health_since; pidfd/polled by the pidfds the daemon held before the kills;"+
		"\n  disk full: the store's tmpfs ("+fdTmpfsSize+") filled to ENOSPC with every process alive (the contract: a full or read-only disk within 2 s);"+
		"\n  database deleted: watchdog.db, -wal and -shm removed after the deaths (the contract: deleted or replaced within 5 s)")
}
