// Command benchdrive is the bench of issue 13 that no Go benchmark can
// give: the real `watchdog serve` binary watching real processes, side by
// side with monit on the same ones, measured from outside as an operator
// would (CPU and RSS from /proc, deaths read back through the HTTP API,
// monit's through its log). scripts/bench.sh builds the binary and runs
// this; docs/bench.md says how to read what it prints.
//
// The parts, chosen with -run:
//
//	idle        CPU per second of wall time and RSS of watchdog and of monit
//	            (`set daemon 1`, one `check process` per pidfile) over the
//	            same -n live processes, settled, over -window
//	deaths      kill -kills of those processes -kill-gap apart: watchdog's
//	            recorded health_since − kill, monit's log line − kill
//	scale       watchdog's idle and deaths at -scale-n processes (monit too
//	            with -monit-scale), and the CPU ratio to -n
//	throughput  -clients concurrent clients each moving its own pending
//	            sessions to running (-transitions in all): transitions/s
//	stores      the daemon on SQLite, then on PostgreSQL (a throwaway
//	            cluster it starts, or -pg-dsn): registrations/s and
//	            transitions/s, then scrape and GET /api/attention times at
//	            each size of -stores-n, side by side, with the ratios
//	flood       the daemon under -flood-n slow-header connections, then
//	            -flood-bodies slow-body ones (its fds bounded by
//	            prlimit): /readyz and registrations, each on a new
//	            connection, against no flood (flood.go)
//	readers     -readers-conns connections that never read, each asking
//	            for the largest list, against -readers-n entities of
//	            about 280 KB: VmRSS before, at the peak and after
//	            (readers.go)
//	memory      the daemon's anonymous RSS empty and after registering
//	            each size of -memory-n running sessions, per added entity,
//	            beside -memory-baseline's (memory.go)
//	fleet       -fleet-daemons daemons with distinct host ids on one
//	            PostgreSQL, -fleet-n sessions each: each one's anonymous RSS
//	            against a lone daemon's with the same -fleet-n, the others'
//	            CPU under a burst of -fleet-burst transitions on one host,
//	            fleet-wide list and queue reads from a daemon that does not
//	            hold them, a restart to ready at -fleet-restart-n own
//	            entities; -fleet-baseline BIN: the fleet-wide reads of
//	            BIN's daemon and this one's alternately (fleetview.go)
//	fdlimit     the daemon under prlimit --nofile=-fdlimit-nofile given
//	            -fdlimit-n live processes: registration errors, /readyz,
//	            pidfd against polled, every one killed and seen dead, the
//	            store filled and deleted under it (fdlimit.go)
//
// Every process it starts is in its own process group; it kills them all
// on the way out, whatever the way (error, SIGINT, SIGTERM).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() { os.Exit(run()) }

// options are the flags.
type options struct {
	watchdog, monit string
	parts           map[string]bool
	n, scaleN       int
	window, settle  time.Duration
	kills           int
	killGap         time.Duration
	detectTimeout   time.Duration
	judgeTimeout    time.Duration
	clients, moves  int
	monitScale      bool
	dir             string
	keep            bool
	storesN         []int  // the stores part's sizes, ascending
	samples         int    // requests per read timing of the stores part
	pgDSN           string // an existing PostgreSQL server; "" starts one
	// The flood part (flood.go).
	floodN, floodNofile int
	floodBodies         int
	// The readers part (readers.go).
	readersN, readersConns     int
	readersHold, readersSettle time.Duration
	readersBaseline            string
	floodLoads                 string
	floodFor, floodTimeout     time.Duration
	floodBaseline              string
	// The idle part's quiet figures (quiet.go).
	straceWindow time.Duration
	baseline     string // a watchdog binary measured idle beside this one
	// The memory part (memory.go).
	memoryN        []int
	memoryBaseline string
	// The fdlimit part (fdlimit.go).
	fdlimitN, fdlimitNofile int
	// The fleet part (fleetview.go).
	fleetDaemons, fleetN, fleetBurst, fleetRestartN int
	fleetBaseline                                   string
}

// allParts are the values of -run, in the order they run.
var allParts = []string{"idle", "deaths", "scale", "throughput", "stores", "flood", "readers", "memory", "fleet", "fdlimit"}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("benchdrive", flag.ContinueOnError)
	fs.StringVar(&o.watchdog, "watchdog", "", "the watchdog binary to measure (required)")
	fs.StringVar(&o.monit, "monit", "monit", "the monit binary")
	runList := fs.String("run", strings.Join(allParts, ","), "the parts to run, comma-separated: "+strings.Join(allParts, ", "))
	fs.IntVar(&o.n, "n", 1000, "processes watched side by side with monit")
	fs.IntVar(&o.scaleN, "scale-n", 10000, "processes of the scale part")
	fs.DurationVar(&o.window, "window", 30*time.Second, "the idle measurement window")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "wait after the watcher is ready and before the window")
	fs.IntVar(&o.kills, "kills", 50, "processes killed per death-latency run")
	fs.DurationVar(&o.killGap, "kill-gap", 200*time.Millisecond, "time between two kills")
	fs.DurationVar(&o.detectTimeout, "detect-timeout", 75*time.Second, "a death not seen this long after its kill counts as missed")
	fs.DurationVar(&o.judgeTimeout, "judge-timeout", 150*time.Second, "how long to wait for watchdog to have judged every process running before measuring anyway")
	fs.IntVar(&o.clients, "clients", 8, "concurrent HTTP clients of the throughput part")
	fs.IntVar(&o.moves, "transitions", 10000, "transitions of the throughput part (as many sessions registered first)")
	fs.BoolVar(&o.monitScale, "monit-scale", false, "run monit at -scale-n too")
	fs.StringVar(&o.dir, "dir", "", "where databases, logs and pidfiles go (default: a new temporary directory, removed at the end)")
	fs.BoolVar(&o.keep, "keep", false, "keep -dir's contents at the end")
	storesN := fs.String("stores-n", "10000,100000", "entity counts at which the stores part times scrapes and attention reads, ascending, comma-separated, none below -transitions")
	fs.IntVar(&o.samples, "samples", 20, "requests per read timing of the stores part")
	fs.StringVar(&o.pgDSN, "pg-dsn", "", "the stores part's PostgreSQL: a postgres:// URL whose user may CREATE DATABASE (default: a throwaway cluster the driver starts)")
	fs.DurationVar(&o.straceWindow, "strace-window", 20*time.Second, "after the idle window, how long strace counts fsyncs (0: not counted)")
	fs.StringVar(&jobsEvery, "jobs-every", "", "run sweep, enforce_terminal and reap_phantoms @every this duration (e.g. 1s, as often as monit looks; default: the config's schedule)")
	fs.StringVar(&o.baseline, "baseline", "", "another watchdog binary (an older build) measured idle on the same processes right after this one: the quiet figures side by side")
	floodFlags(fs, &o)
	readersFlags(fs, &o)
	var memoryN string
	memoryFlags(fs, &o, &memoryN)
	fdlimitFlags(fs, &o)
	fleetFlags(fs, &o)
	// One line for a bad flag (run prints it); the full list only for -h.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fmt.Fprintln(os.Stderr, "usage: benchdrive -watchdog BIN [flags] (docs/bench.md)")
			fs.PrintDefaults()
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (every setting is a flag)", fs.Arg(0))
	}
	if o.watchdog == "" {
		return o, errors.New("-watchdog: the binary to measure is required (scripts/bench.sh builds it)")
	}
	o.parts = map[string]bool{}
	for _, p := range strings.Split(*runList, ",") {
		p = strings.TrimSpace(p)
		if !contains(allParts, p) {
			return o, fmt.Errorf("-run: %q is not a part (parts: %s)", p, strings.Join(allParts, ", "))
		}
		o.parts[p] = true
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"-n", o.n}, {"-scale-n", o.scaleN}, {"-kills", o.kills}, {"-clients", o.clients}, {"-transitions", o.moves}, {"-samples", o.samples}} {
		if c.v < 1 {
			return o, fmt.Errorf("%s: %d is not a positive number", c.name, c.v)
		}
	}
	if o.window <= 0 || o.settle < 0 || o.killGap < 0 || o.detectTimeout <= 0 || o.judgeTimeout <= 0 {
		return o, errors.New("-window, -detect-timeout and -judge-timeout must be positive; -settle and -kill-gap not negative")
	}
	if o.kills > o.n && (o.parts["idle"] || o.parts["deaths"]) {
		return o, fmt.Errorf("-kills %d is more than -n %d", o.kills, o.n)
	}
	if o.parts["flood"] {
		if err := checkFlood(o); err != nil {
			return o, err
		}
	}
	if o.parts["readers"] {
		if err := checkReaders(o); err != nil {
			return o, err
		}
	}
	if o.parts["memory"] {
		if err := checkMemory(&o, memoryN); err != nil {
			return o, err
		}
	}
	if o.parts["fdlimit"] {
		if err := checkFdlimit(o); err != nil {
			return o, err
		}
	}
	if o.parts["stores"] {
		sizes, err := parseSizes(*storesN, o.moves)
		if err != nil {
			return o, fmt.Errorf("-stores-n: %w", err)
		}
		o.storesN = sizes
	}
	return o, nil
}

// parseSizes reads -stores-n: ascending counts, none below least (the
// stores part has registered that many before its first size).
func parseSizes(list string, least int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		if n < least {
			return nil, fmt.Errorf("%d is below -transitions %d, which are registered first", n, least)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%d does not follow %d: sizes go up", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

func run() int {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchdrive:", err)
		return 2
	}
	// Our own process group: the script's trap ends the whole run, this
	// and every child, with one kill(-pgid), even if this dies first.
	syscall.Setpgid(0, 0) //nolint:errcheck // already a group leader is fine

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	r := &runner{o: o, clk: clockTicks()}
	err = r.all(ctx)
	r.cleanup(err != nil)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "benchdrive: interrupted; every process it started is stopped")
			return 130
		}
		fmt.Fprintln(os.Stderr, "benchdrive:", err)
		return 1
	}
	return 0
}

// runner holds one run's state: what to clean up, and the figures.
type runner struct {
	o       options
	clk     int64
	dir     string
	tempDir bool
	fleet   *fleet
	live    []*child // watchdog serve and monit instances still running
	pg      *pgServer
	res     results
}

func (r *runner) all(ctx context.Context) error {
	if r.o.dir == "" {
		d, err := os.MkdirTemp("", "watchdog-bench.")
		if err != nil {
			return fmt.Errorf("temporary directory: %w", err)
		}
		r.dir, r.tempDir = d, true
	} else {
		r.dir = r.o.dir
	}
	f, err := newFleet(filepath.Join(r.dir, "pids"))
	if err != nil {
		return err
	}
	r.fleet = f
	r.res.header = header(r.o)

	side := r.o.parts["idle"] || r.o.parts["deaths"]
	if side {
		if err := r.watchdog(ctx, "wd-n", r.o.n, r.o.parts["idle"], r.o.parts["deaths"], &r.res.wd); err != nil {
			return err
		}
		if r.o.baseline != "" && r.o.parts["idle"] {
			if err := r.watchdogBin(ctx, r.o.baseline, "wd-baseline", r.o.n, true, r.o.parts["deaths"], &r.res.wdBase); err != nil {
				return fmt.Errorf("baseline: %w", err)
			}
		}
		if err := r.monit(ctx, "monit-n", r.o.n, r.o.parts["idle"], r.o.parts["deaths"], &r.res.monit); err != nil {
			return err
		}
	}
	if r.o.parts["scale"] {
		if err := r.watchdog(ctx, "wd-scale", r.o.scaleN, true, true, &r.res.wdScale); err != nil {
			return err
		}
		if r.o.monitScale {
			if err := r.monit(ctx, "monit-scale", r.o.scaleN, true, true, &r.res.monitScale); err != nil {
				return err
			}
		}
	}
	r.fleet.stopAll()
	if r.o.parts["throughput"] {
		if err := r.throughput(ctx); err != nil {
			return err
		}
	}
	if r.o.parts["stores"] {
		if err := r.stores(ctx); err != nil {
			return err
		}
	}
	if r.o.parts["flood"] {
		if err := r.flood(ctx); err != nil {
			return err
		}
	}
	if r.o.parts["readers"] {
		if err := r.readers(ctx); err != nil {
			return err
		}
	}
	if r.o.parts["memory"] {
		if err := r.memory(ctx); err != nil {
			return err
		}
	}
	if r.o.parts["fleet"] {
		if err := r.fleetView(ctx); err != nil {
			return err
		}
	}
	if r.o.parts["fdlimit"] {
		if err := r.fdlimit(ctx); err != nil {
			return err
		}
	}
	r.res.print(os.Stdout, r.o)
	if r.o.parts["stores"] {
		r.res.printStores(os.Stdout, r.o)
	}
	r.res.printFlood(os.Stdout, r.o)
	r.res.printReaders(os.Stdout, r.o)
	r.res.printMemory(os.Stdout, r.o)
	r.res.printFleet(os.Stdout, r.o)
	r.res.printFdlimit(os.Stdout, r.o)
	return nil
}

// cleanup stops whatever is still running and removes the temporary
// directory, unless -keep or the run failed (its logs say why). A -dir
// given is left as it is.
func (r *runner) cleanup(failed bool) {
	for _, c := range r.live {
		c.stop(5 * time.Second)
	}
	if r.fleet != nil {
		r.fleet.stopAll()
	}
	if r.pg != nil {
		r.pg.stop() // after the daemons: a smart shutdown waits for its clients
	}
	switch {
	case r.dir == "":
	case r.tempDir && !r.o.keep && !failed:
		os.RemoveAll(r.dir) //nolint:errcheck // a leftover temp dir is harmless
	case r.o.keep || failed:
		fmt.Fprintln(os.Stderr, "benchdrive: logs and databases are in", r.dir)
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...)
}

// watcher is the figures of one watcher at one size.
type watcher struct {
	ran    bool
	n      int
	idle   *idle
	deaths *deaths
	// enforced: how long after death + terminal_grace each killed one was
	// ended (watchdog only).
	enforced *deaths
	// adopted: how long after a registration its process was watched by
	// pidfd (watchdog only).
	adopted *deaths
	note    string // what went short of plan (not every process judged…)
}

// watchdog measures `watchdog serve` over p1…pn.
func (r *runner) watchdog(ctx context.Context, tag string, n int, doIdle, doDeaths bool, out *watcher) error {
	return r.watchdogBin(ctx, r.o.watchdog, tag, n, doIdle, doDeaths, out)
}

// watchdogBin is watchdog with the binary bin.
func (r *runner) watchdogBin(ctx context.Context, bin, tag string, n int, doIdle, doDeaths bool, out *watcher) error {
	*out = watcher{ran: true, n: n}
	say("watchdog at %d processes: starting them", n)
	if err := r.fleet.ensure(n); err != nil {
		return err
	}
	w, err := startWatchdog(ctx, bin, filepath.Join(r.dir, tag), time.Minute)
	if err != nil {
		return err
	}
	r.live = append(r.live, w.child)
	defer w.stop(10 * time.Second)

	say("watchdog at %d: registering them over HTTP", n)
	t := time.Now()
	if err := w.registerFleet(ctx, r.fleet, n, r.o.clients); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	say("watchdog at %d: registered in %s; waiting until it has judged every one running", n, time.Since(t).Round(time.Millisecond))
	judged, err := w.waitJudged(ctx, n, r.o.judgeTimeout)
	if err != nil {
		return fmt.Errorf("wait for judgement: %w", err)
	}
	if judged < n {
		out.note = fmt.Sprintf("only %d of %d read running after %s; measured anyway", judged, n, r.o.judgeTimeout)
		say("watchdog at %d: %s", n, out.note)
	} else {
		say("watchdog at %d: all running after %s", n, time.Since(t).Round(time.Millisecond))
	}
	if err := sleepCtx(ctx, r.o.settle); err != nil {
		return err
	}
	if doIdle {
		say("watchdog at %d: idle window of %s", n, r.o.window)
		id, err := measureIdle(ctx, w.child, r.o.window, r.clk, r.o.straceWindow)
		if err != nil {
			return fmt.Errorf("watchdog idle: %w", err)
		}
		out.idle = &id

		// After the idle window: asking /metrics every 5 ms makes garbage
		// the window's RSS would otherwise count.
		const k = 20
		say("watchdog at %d: registering %d more, one at a time, until each is watched by pidfd", n, k)
		if err := r.fleet.ensure(n + k); err != nil {
			return err
		}
		a, err := w.adoption(ctx, r.fleet, n, k, 10*time.Second)
		if err != nil {
			return fmt.Errorf("watchdog adoption: %w", err)
		}
		out.adopted = &a
	}
	if doDeaths {
		say("watchdog at %d: killing %d, %s apart", n, r.o.kills, r.o.killGap)
		d, err := measureDeaths(ctx, r.fleet, victims(n, r.o.kills), r.o.killGap, r.o.detectTimeout, watchdogDetector{w})
		if err != nil {
			return fmt.Errorf("watchdog deaths: %w", err)
		}
		out.deaths = &d
		killed := victims(n, r.o.kills)
		say("watchdog at %d: waiting for the %d killed to be ended at terminal_grace (%s)", n, len(killed), defaultGrace)
		e, err := w.enforcement(ctx, killed, defaultGrace, r.o.detectTimeout)
		if err != nil {
			return fmt.Errorf("watchdog enforcement: %w", err)
		}
		out.enforced = &e
	}
	return nil
}

// defaultGrace is thresholds.terminal_grace at its default, which the
// bench's daemon runs with.
const defaultGrace = 30 * time.Second

// monit measures monit over p1…pn.
func (r *runner) monit(ctx context.Context, tag string, n int, doIdle, doDeaths bool, out *watcher) error {
	*out = watcher{ran: true, n: n}
	bin, err := exec.LookPath(r.o.monit)
	if err != nil {
		return fmt.Errorf("monit: %w (Debian: apt-get install -y monit; scripts/bench.sh does)", err)
	}
	say("monit at %d processes: starting them", n)
	if err := r.fleet.ensure(n); err != nil {
		return err
	}
	dir := filepath.Join(r.dir, tag)
	m, err := startMonit(ctx, bin, dir, r.fleet, n, time.Minute)
	if err != nil {
		return err
	}
	r.live = append(r.live, m)
	defer m.stop(10 * time.Second)
	if err := sleepCtx(ctx, r.o.settle); err != nil {
		return err
	}
	if doIdle {
		say("monit at %d: idle window of %s", n, r.o.window)
		id, err := measureIdle(ctx, m, r.o.window, r.clk, r.o.straceWindow)
		if err != nil {
			return fmt.Errorf("monit idle: %w", err)
		}
		out.idle = &id
	}
	if doDeaths {
		say("monit at %d: killing %d, %s apart", n, r.o.kills, r.o.killGap)
		d, err := measureDeaths(ctx, r.fleet, victims(n, r.o.kills), r.o.killGap, r.o.detectTimeout, newMonitDetector(m, dir))
		if err != nil {
			return fmt.Errorf("monit deaths: %w", err)
		}
		out.deaths = &d
	}
	return nil
}

// throughput measures POST …/transitions on a daemon of its own.
func (r *runner) throughput(ctx context.Context) error {
	say("throughput: %d transitions from %d clients", r.o.moves, r.o.clients)
	w, err := startWatchdog(ctx, r.o.watchdog, filepath.Join(r.dir, "wd-throughput"), time.Minute)
	if err != nil {
		return err
	}
	r.live = append(r.live, w.child)
	defer w.stop(10 * time.Second)
	rate, p99, err := w.throughput(ctx, r.o.moves, r.o.clients)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	r.res.throughput, r.res.throughputP99 = rate, p99
	return nil
}
