package main

// The fleet part (issue 27, ADR-0056): -fleet-daemons daemons with
// distinct host ids on one PostgreSQL database, -fleet-n sessions each,
// every one registered through its own host's daemon. What it shows:
// each daemon holds its own host's entities (watchdog_view_entities),
// its anonymous RSS against a lone daemon holding the same -fleet-n; a
// burst of -fleet-burst transitions on one host and the CPU it costs the
// others against the writer; the fleet-wide list and queue read from a
// daemon that does not hold them; and a daemon restarted with
// -fleet-restart-n own entities, from exec to /readyz 200. With
// -fleet-baseline BIN, the fleet-wide reads of this binary and of BIN side
// by side (fleetSideBySide).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"
)

func fleetFlags(fs *flag.FlagSet, o *options) {
	fs.IntVar(&o.fleetDaemons, "fleet-daemons", 20, "daemons of the fleet part, each with its own host_id, on one PostgreSQL")
	fs.IntVar(&o.fleetN, "fleet-n", 2000, "sessions of each host in the fleet part")
	fs.IntVar(&o.fleetBurst, "fleet-burst", 10000, "transitions of the fleet part's burst on one host")
	fs.IntVar(&o.fleetRestartN, "fleet-restart-n", 3000, "own entities of the daemon the fleet part restarts (at least -fleet-n)")
	fs.StringVar(&o.fleetBaseline, "fleet-baseline", "", "a second watchdog binary (the one before a change) whose fleet-wide reads the fleet part times beside this one's, alternately, each from a daemon of its own joined to the fleet")
}

// fleetFigures are the fleet part's figures.
type fleetFigures struct {
	daemons, n, burst, restartN int
	loneAnonKB                  int64
	anonKB                      []int64 // each fleet daemon's, in host order
	held                        []int   // each one's watchdog_view_entities
	writerCPU, othersMax        float64 // seconds of CPU over the burst
	othersMean                  float64
	burstRate                   float64 // transitions/s
	list, queue, hostList       time.Duration
	restart                     time.Duration
	// With -fleet-baseline: the fleet-wide list and queue read
	// alternately from two daemons joined to the fleet, one of each
	// binary, each of an empty host of its own.
	sideList, sideQueue [2]time.Duration // this binary's, the baseline's
}

func fleetHost(k int) string { return fmt.Sprintf("bench-h%02d", k) }

// fleetView runs the fleet part.
func (r *runner) fleetView(ctx context.Context) error {
	o := r.o
	if o.fleetDaemons < 3 || o.fleetN < 1 || o.fleetBurst < 1 || o.fleetRestartN < o.fleetN {
		return errors.New("fleet: -fleet-daemons at least 3, -fleet-n and -fleet-burst positive, -fleet-restart-n at least -fleet-n")
	}
	if o.fleetBaseline != "" {
		if _, err := os.Stat(o.fleetBaseline); err != nil {
			return fmt.Errorf("fleet: -fleet-baseline: %w", err)
		}
	}
	if r.pg == nil {
		say("fleet: starting a throwaway PostgreSQL cluster")
		pg, err := startPG(ctx, o.pgDSN, 2*time.Minute)
		if err != nil {
			return fmt.Errorf("fleet, PostgreSQL: %w", err)
		}
		r.pg = pg
	}
	f := &fleetFigures{daemons: o.fleetDaemons, n: o.fleetN, burst: o.fleetBurst, restartN: o.fleetRestartN}
	r.res.fleet = f
	const clients = 8

	// A lone daemon holding -fleet-n: the RSS the fleet's are held to.
	dsn, err := r.pg.database(ctx)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	say("fleet: a lone daemon with %d sessions", o.fleetN)
	lone, err := startWatchdogOn(ctx, o.watchdog, filepath.Join(r.dir, "fleet-lone"), storeConf{driver: "postgres", dsn: dsn, hostID: "bench-lone"}, time.Minute)
	if err != nil {
		return fmt.Errorf("fleet, lone: %w", err)
	}
	r.live = append(r.live, lone.child)
	if _, err := lone.registerSessions(ctx, 0, o.fleetN, "running", func(int) string { return "bench-lone" }, clients); err != nil {
		return fmt.Errorf("fleet, lone: %w", err)
	}
	if f.loneAnonKB, _, err = anonAfter(ctx, lone.pid(), 5*time.Second); err != nil {
		return fmt.Errorf("fleet, lone: %w", err)
	}
	lone.stop(10 * time.Second)
	if err := r.pg.drop(ctx, dsn); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}

	// The fleet.
	if dsn, err = r.pg.database(ctx); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	defer r.pg.drop(context.WithoutCancel(ctx), dsn) //nolint:errcheck // a throwaway database
	conf := func(k int) storeConf { return storeConf{driver: "postgres", dsn: dsn, hostID: fleetHost(k)} }
	dirOf := func(k int) string { return filepath.Join(r.dir, "fleet-"+fleetHost(k)) }
	ws := make([]*watchdogd, o.fleetDaemons)
	say("fleet: %d daemons, %d sessions each", o.fleetDaemons, o.fleetN)
	for k := range ws {
		w, err := startWatchdogOn(ctx, o.watchdog, dirOf(k), conf(k), 2*time.Minute)
		if err != nil {
			return fmt.Errorf("fleet, %s: %w", fleetHost(k), err)
		}
		r.live = append(r.live, w.child)
		defer func() { ws[k].stop(10 * time.Second) }()
		ws[k] = w
	}
	for k, w := range ws {
		host := fleetHost(k)
		if _, err := w.registerSessions(ctx, k*o.fleetN, (k+1)*o.fleetN, "running", func(int) string { return host }, clients); err != nil {
			return fmt.Errorf("fleet, %s: %w", host, err)
		}
	}
	// Each view holds its host's (the leader's its host's too: nothing
	// here is host-less or of a silent host).
	f.held = make([]int, len(ws))
	if err := poll(ctx, 2*time.Minute, 250*time.Millisecond, "each daemon to hold its own host's sessions", func() (bool, error) {
		for k, w := range ws {
			f.held[k] = w.viewEntities(ctx)
			if f.held[k] != o.fleetN {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return fmt.Errorf("fleet: %w (held %v)", err, f.held)
	}
	say("fleet: anonymous RSS of each daemon, settled")
	f.anonKB = make([]int64, len(ws))
	var wg sync.WaitGroup
	errs := make([]error, len(ws))
	for k, w := range ws {
		wg.Go(func() { f.anonKB[k], _, errs[k] = anonAfter(ctx, w.pid(), 5*time.Second) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fleet: %w", err)
	}

	// The burst: -fleet-burst pending sessions of the writer's host
	// registered first, then each moved to running; every daemon's CPU
	// over the moves.
	writer := ws[1]
	from := o.fleetDaemons * o.fleetN
	say("fleet: a burst of %d transitions on %s", o.fleetBurst, fleetHost(1))
	if _, err := writer.registerSessions(ctx, from, from+o.fleetBurst, "pending", func(int) string { return fleetHost(1) }, clients); err != nil {
		return fmt.Errorf("fleet, burst: %w", err)
	}
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		return err
	}
	before := make([]int64, len(ws))
	for k, w := range ws {
		u, err := readUsage(w.pid())
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		before[k] = u.ticks
	}
	if f.burstRate, _, err = writer.moveSessions(ctx, span(from, from+o.fleetBurst), "pending", "running", nil, clients); err != nil {
		return fmt.Errorf("fleet, burst: %w", err)
	}
	// The others' share of the burst is what their feeds read after it:
	// a few seconds for the last notifications.
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	var sum float64
	for k, w := range ws {
		u, err := readUsage(w.pid())
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		s := float64(u.ticks-before[k]) / float64(r.clk)
		if w == writer {
			f.writerCPU = s
			continue
		}
		sum += s
		f.othersMax = max(f.othersMax, s)
	}
	f.othersMean = sum / float64(len(ws)-1)

	// Fleet-wide reads from a daemon that holds only its own host.
	reader := ws[2]
	if f.list, err = medianGet(ctx, reader, "/api/v1/entities?limit=500", o.samples); err != nil {
		return fmt.Errorf("fleet, list: %w", err)
	}
	if f.queue, err = medianGet(ctx, reader, "/api/attention", o.samples); err != nil {
		return fmt.Errorf("fleet, queue: %w", err)
	}
	if f.hostList, err = medianGet(ctx, reader, "/api/v1/entities?limit=500&host="+fleetHost(3), o.samples); err != nil {
		return fmt.Errorf("fleet, host list: %w", err)
	}

	if o.fleetBaseline != "" {
		if err := r.fleetSideBySide(ctx, f, conf, o.samples); err != nil {
			return fmt.Errorf("fleet, baseline: %w", err)
		}
	}

	// A restart with -fleet-restart-n own entities.
	k := 4
	more := o.fleetRestartN - o.fleetN
	extra := from + o.fleetBurst
	if _, err := ws[k].registerSessions(ctx, extra, extra+more, "running", func(int) string { return fleetHost(k) }, clients); err != nil {
		return fmt.Errorf("fleet, restart: %w", err)
	}
	ws[k].stop(10 * time.Second)
	say("fleet: %s restarted with %d own sessions", fleetHost(k), o.fleetRestartN)
	start := time.Now()
	w, err := startWatchdogOn(ctx, o.watchdog, dirOf(k), conf(k), 2*time.Minute)
	if err != nil {
		return fmt.Errorf("fleet, restart: %w", err)
	}
	f.restart = time.Since(start)
	r.live = append(r.live, w.child)
	ws[k] = w
	return nil
}

// fleetSideBySide joins a daemon of this binary and one of
// -fleet-baseline to the fleet, each with a host of its own and no
// entities, and times the fleet-wide list and queue from each, the two
// alternating request by request (which goes first alternating too), so
// both see the same database and the same load: the medians' ratio is
// the change's.
func (r *runner) fleetSideBySide(ctx context.Context, f *fleetFigures, conf func(int) storeConf, samples int) error {
	bins := [2]string{r.o.watchdog, r.o.fleetBaseline}
	var ws [2]*watchdogd
	for i, bin := range bins {
		tag := [2]string{"this", "baseline"}[i]
		c := conf(0)
		c.hostID = "bench-reader-" + tag
		say("fleet: a reading daemon of the %s binary", tag)
		w, err := startWatchdogOn(ctx, bin, filepath.Join(r.dir, "fleet-reader-"+tag), c, 2*time.Minute)
		if err != nil {
			return err
		}
		r.live = append(r.live, w.child)
		defer w.stop(10 * time.Second)
		ws[i] = w
	}
	for _, read := range []struct {
		path string
		into *[2]time.Duration
	}{{"/api/v1/entities?limit=500", &f.sideList}, {"/api/attention", &f.sideQueue}} {
		var ds [2][]time.Duration
		for k := range 2 * samples {
			for j := range 2 {
				i := (k + j) % 2
				t := time.Now()
				if _, err := ws[i].get(ctx, read.path); err != nil {
					return err
				}
				ds[i] = append(ds[i], time.Since(t))
			}
		}
		for i := range ds {
			slices.Sort(ds[i])
			read.into[i] = ds[i][len(ds[i])/2]
		}
	}
	return nil
}

var viewEntitiesLine = regexp.MustCompile(`(?m)^watchdog_view_entities (\d+)$`)

// viewEntities is the daemon's watchdog_view_entities, -1 when unread.
func (w *watchdogd) viewEntities(ctx context.Context) int {
	b, err := w.get(ctx, "/metrics")
	if err != nil {
		return -1
	}
	m := viewEntitiesLine.FindSubmatch(b)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// medianGet is the median time of samples GETs of path.
func medianGet(ctx context.Context, w *watchdogd, path string, samples int) (time.Duration, error) {
	ds := make([]time.Duration, 0, samples)
	for range samples {
		t := time.Now()
		if _, err := w.get(ctx, path); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// printFleet prints the fleet part's table.
func (res *results) printFleet(w io.Writer, o options) {
	f := res.fleet
	if f == nil {
		return
	}
	fmt.Fprintf(w, "\nFleet (issue 27): %d daemons on one PostgreSQL, %d sessions each\n\n", f.daemons, f.n)
	tw := newTable(w)
	fmt.Fprintln(tw, "measurement\tvalue\ttarget\tmet")
	maxAnon := slices.Max(f.anonKB)
	ratio := float64(maxAnon) / float64(f.loneAnonKB)
	fmt.Fprintf(tw, "entities each view holds (min..max)\t%d..%d\t%d\t%v\n", slices.Min(f.held), slices.Max(f.held), f.n, slices.Min(f.held) == f.n && slices.Max(f.held) == f.n)
	fmt.Fprintf(tw, "anonymous RSS, lone daemon with %d\t%.1f MB\t\t\n", f.n, float64(f.loneAnonKB)/1024)
	fmt.Fprintf(tw, "anonymous RSS, fleet daemons (median, max)\t%.1f, %.1f MB\t\t\n", float64(median64(f.anonKB))/1024, float64(maxAnon)/1024)
	fmt.Fprintf(tw, "largest fleet daemon / lone\t%.2f\t≤ 1.5\t%v\n", ratio, ratio <= 1.5)
	fmt.Fprintf(tw, "burst of %d transitions on one host\t%.0f/s\t\t\n", f.burst, f.burstRate)
	fmt.Fprintf(tw, "CPU over the burst: writer\t%.2f s\t\t\n", f.writerCPU)
	fmt.Fprintf(tw, "CPU over the burst: each other (mean, max)\t%.3f, %.3f s\t\t\n", f.othersMean, f.othersMax)
	share := f.othersMax / f.writerCPU
	fmt.Fprintf(tw, "busiest other / writer\t%.3f\t< 0.10\t%v\n", share, share < 0.10)
	fmt.Fprintf(tw, "fleet-wide list, first page of 500 (median)\t%s\t≤ 50ms\t%v\n", f.list.Round(time.Millisecond), f.list <= 50*time.Millisecond)
	fmt.Fprintf(tw, "fleet-wide queue (median)\t%s\t≤ 50ms\t%v\n", f.queue.Round(time.Millisecond), f.queue <= 50*time.Millisecond)
	fmt.Fprintf(tw, "another host's list (median)\t%s\t\t\n", f.hostList.Round(time.Millisecond))
	fmt.Fprintf(tw, "restart to ready, %d own entities\t%s\t≤ 2s\t%v\n", f.restartN, f.restart.Round(10*time.Millisecond), f.restart <= 2*time.Second)
	if o.fleetBaseline != "" {
		for _, s := range []struct {
			what string
			d    [2]time.Duration
		}{{"list, first page of 500", f.sideList}, {"queue", f.sideQueue}} {
			fmt.Fprintf(tw, "fleet-wide %s side by side: baseline ÷ this (medians %s, %s)\t%.2f\t\t\n", s.what,
				s.d[1].Round(100*time.Microsecond), s.d[0].Round(100*time.Microsecond), float64(s.d[1])/float64(s.d[0]))
		}
	}
	tw.Flush()
}

func median64(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
