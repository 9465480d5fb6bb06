package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The memory part (ADR-0042): the built daemon's anonymous memory
// (RssAnon of /proc/PID/status: the Go heap with the collector's
// headroom, stacks, the runtime's and SQLite's allocations; not the
// binary's mapped pages, which the page cache shares) with an empty
// store, then after registering each size of -memory-n running sessions
// over the API once it has settled (anonAfter), and per added entity:
// (RssAnon at n − empty) ÷ n. With
// -memory-baseline a second binary (the one before a change) runs beside
// it, each step taken on one and at once on the other, so the two are
// compared in one run on a machine whose load drifts.

// memFigures are one binary's figures.
type memFigures struct {
	bin     string // "this", "baseline"
	emptyKB int64
	sizes   []memSize
}

// memSize is one size's figures.
type memSize struct {
	n          int
	anonKB     int64
	rssKB      int64
	registered float64 // registrations/s to reach n
	// quiet is how long after the registrations the reading waited for
	// the daemon's work to end (waitQuiet), and whether it did.
	quiet   time.Duration
	quietOK bool
}

// perEntity is the anonymous memory per added entity, in bytes.
func (f memFigures) perEntity(s memSize) float64 {
	return float64(s.anonKB-f.emptyKB) * 1024 / float64(s.n)
}

// memoryFlags are the memory part's flags.
func memoryFlags(fs interface {
	StringVar(p *string, name string, value string, usage string)
}, o *options, sizes *string) {
	fs.StringVar(sizes, "memory-n", "10000,100000", "running sessions the memory part registers before each reading of RssAnon, ascending, comma-separated")
	fs.StringVar(&o.memoryBaseline, "memory-baseline", "", "a second watchdog binary the memory part measures beside the first (the one before a change)")
}

// checkMemory checks the memory part's flags.
func checkMemory(o *options, sizes string) error {
	n, err := parseSizes(sizes, 1)
	if err != nil {
		return fmt.Errorf("-memory-n: %w", err)
	}
	o.memoryN = n
	if o.memoryBaseline != "" {
		if _, err := os.Stat(o.memoryBaseline); err != nil {
			return fmt.Errorf("-memory-baseline: %w", err)
		}
	}
	return nil
}

// anonAfter waits settle, then reads RssAnon every second until it has
// settled: the runtime returns the heap a burst of writes grew (the
// collector's headroom over a larger heap, garbage) to the kernel a
// little at a time, so a reading right after the writes measures the
// burst, not what the entities hold. Settled is no reading 1% below the
// lowest for 10 s, or 2 minutes in all; the figure is the median of the
// last three readings.
func anonAfter(ctx context.Context, pid int, settle time.Duration) (anonKB, rssKB int64, err error) {
	if err := sleepCtx(ctx, settle); err != nil {
		return 0, 0, err
	}
	var anon, rss []int64
	lowest, since := int64(0), 0
	for i := 0; i < 120 && (i < 3 || since < 10); i++ {
		if i > 0 {
			if err := sleepCtx(ctx, time.Second); err != nil {
				return 0, 0, err
			}
		}
		u, err := readUsage(pid)
		if err != nil {
			return 0, 0, err
		}
		anon, rss = append(anon, u.anonKB), append(rss, u.rssKB)
		if lowest == 0 || u.anonKB < lowest*99/100 {
			lowest, since = u.anonKB, 0
		} else {
			since++
		}
	}
	anon, rss = anon[len(anon)-3:], rss[len(rss)-3:]
	slices.Sort(anon)
	slices.Sort(rss)
	return anon[1], rss[1], nil
}

// The daemon's work after a burst of registrations, which holds heap the
// reading must not count (ADR-0052): the monitor's first check of each new
// entity, and a sweep of every open entity each minute. waitQuiet waits
// for it to end before the reading.
const (
	// quietGap is how long without a collection says the daemon is quiet
	// and its quiet release (5 s after the last collection, ADR-0052) has
	// had its turn: that release's own collection restarts the gap.
	quietGap = 8 * time.Second
	// quietCeiling bounds the wait; past it the reading is taken anyway,
	// marked as not quiet.
	quietCeiling = 6 * time.Minute
)

// jobRuns is the number of runs of job in a scrape that ran (every
// result but skipped: a fire that found the last run still going).
func jobRuns(exposition []byte, job string) float64 {
	prefix := `watchdog_job_runs_total{job="` + job + `"`
	sum := 0.0
	for _, line := range strings.Split(string(exposition), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok && !strings.HasPrefix(rest, `,result="skipped"`) {
			if f := strings.Fields(rest); len(f) > 0 {
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				if err == nil {
					sum += v
				}
			}
		}
	}
	return sum
}

// waitQuiet waits until two sweeps have finished since sweeps0 runs (the
// first may have started during the registrations; the second started
// after them and read every new entity) and then no collection has run
// for quietGap, scraping every 2 s (a scrape allocates far less than a
// collection's trigger at these sizes). It says how long it waited and
// whether it got there within quietCeiling.
func (w *watchdogd) waitQuiet(ctx context.Context, sweeps0 float64) (time.Duration, bool, error) {
	start := time.Now()
	lastGC, gcAt := -1.0, time.Now()
	for time.Since(start) < quietCeiling {
		if err := sleepCtx(ctx, 2*time.Second); err != nil {
			return 0, false, err
		}
		b, err := w.get(ctx, "/metrics")
		if err != nil {
			return 0, false, err
		}
		gc, ok := metricValues(b, "go_gc_duration_seconds_count")[""]
		if !ok {
			return 0, false, errors.New("scrape: no go_gc_duration_seconds_count")
		}
		if gc != lastGC {
			lastGC, gcAt = gc, time.Now()
		}
		if jobRuns(b, "sweep")-sweeps0 >= 2 && time.Since(gcAt) >= quietGap {
			return time.Since(start), true, nil
		}
	}
	return time.Since(start), false, nil
}

// anonNow is the median of three readings of RssAnon a second apart.
func anonNow(ctx context.Context, pid int) (anonKB, rssKB int64, err error) {
	var anon, rss []int64
	for i := range 3 {
		if i > 0 {
			if err := sleepCtx(ctx, time.Second); err != nil {
				return 0, 0, err
			}
		}
		u, err := readUsage(pid)
		if err != nil {
			return 0, 0, err
		}
		anon, rss = append(anon, u.anonKB), append(rss, u.rssKB)
	}
	slices.Sort(anon)
	slices.Sort(rss)
	return anon[1], rss[1], nil
}

// memory runs the memory part.
func (r *runner) memory(ctx context.Context) error {
	bins := []struct{ tag, bin string }{{"this", r.o.watchdog}}
	if r.o.memoryBaseline != "" {
		bins = append(bins, struct{ tag, bin string }{"baseline", r.o.memoryBaseline})
	}
	type side struct {
		w   *watchdogd
		out *memFigures
	}
	var sides []side
	r.res.memory = make([]memFigures, len(bins))
	for i, b := range bins {
		say("memory: watchdog serve (%s) on an empty SQLite store", b.tag)
		w, err := startWatchdog(ctx, b.bin, filepath.Join(r.dir, "wd-memory-"+b.tag), time.Minute)
		if err != nil {
			return fmt.Errorf("memory, %s: %w", b.tag, err)
		}
		r.live = append(r.live, w.child)
		defer w.stop(10 * time.Second)
		r.res.memory[i] = memFigures{bin: b.tag}
		sides = append(sides, side{w, &r.res.memory[i]})
	}
	pidOf := func(s side) (int, error) {
		if s.w.cmd.Process == nil {
			return 0, errors.New("the daemon has no pid")
		}
		return s.w.cmd.Process.Pid, nil
	}
	for _, s := range sides {
		pid, err := pidOf(s)
		if err != nil {
			return err
		}
		if s.out.emptyKB, _, err = anonAfter(ctx, pid, r.o.settle); err != nil {
			return fmt.Errorf("memory, %s: %w", s.out.bin, err)
		}
	}
	have := 0
	sweeps := make([]float64, len(sides))
	for _, n := range r.o.memoryN {
		for i, s := range sides {
			b, err := s.w.get(ctx, "/metrics")
			if err != nil {
				return fmt.Errorf("memory, %s: %w", s.out.bin, err)
			}
			sweeps[i] = jobRuns(b, "sweep")
			say("memory (%s): registering %d more running sessions, up to %d", s.out.bin, n-have, n)
			rate, err := s.w.registerSessions(ctx, have, n, "running", nil, r.o.clients)
			if err != nil {
				return fmt.Errorf("memory, %s: %w", s.out.bin, err)
			}
			s.out.sizes = append(s.out.sizes, memSize{n: n, registered: rate})
		}
		for _, s := range sides {
			// A scrape and a read of the queue: the view has read every
			// registration, the readers' first answers are made.
			for _, path := range []string{"/metrics", "/api/attention"} {
				if _, err := s.w.get(ctx, path); err != nil {
					return fmt.Errorf("memory, %s: %w", s.out.bin, err)
				}
			}
		}
		for i, s := range sides {
			pid, err := pidOf(s)
			if err != nil {
				return err
			}
			last := &s.out.sizes[len(s.out.sizes)-1]
			say("memory (%s): waiting for a sweep after the registrations and a quiet heap", s.out.bin)
			if last.quiet, last.quietOK, err = s.w.waitQuiet(ctx, sweeps[i]); err != nil {
				return fmt.Errorf("memory, %s: %w", s.out.bin, err)
			}
			read := func() (int64, int64, error) { return anonNow(ctx, pid) }
			if !last.quietOK {
				read = func() (int64, int64, error) { return anonAfter(ctx, pid, 0) }
			}
			if last.anonKB, last.rssKB, err = read(); err != nil {
				return fmt.Errorf("memory, %s: %w", s.out.bin, err)
			}
		}
		have = n
	}
	return nil
}

// printMemory prints the memory part's table.
func (res *results) printMemory(w io.Writer, o options) {
	if len(res.memory) == 0 {
		return
	}
	fmt.Fprintf(w, "\nmemory: RssAnon of watchdog serve on SQLite, empty (read from %s after start until settled: no reading 1%% lower for 10 s, the median of the last three)\n"+
		"and after registering running sessions over the API (%d clients), once quiet: two sweeps run after the registrations and no collection for %s\n"+
		"(the median of three readings a second apart; \"not quiet\" past %s: read until settled instead); per entity = (RssAnon at n − empty) ÷ n; ×: this ÷ baseline\n",
		o.settle, o.clients, quietGap, quietCeiling)
	tw := newTable(w)
	fmt.Fprintln(tw, "binary\tsessions\tRssAnon\tVmRSS\tper entity\tregister/s\tquiet after\ttarget")
	var base *memFigures
	for i := range res.memory {
		if res.memory[i].bin == "baseline" {
			base = &res.memory[i]
		}
	}
	ratio := func(v, b float64) string {
		if base == nil || b == 0 {
			return ""
		}
		return fmt.Sprintf(" (×%.2f)", v/b)
	}
	for _, f := range res.memory {
		var bEmpty float64
		if base != nil {
			bEmpty = float64(base.emptyKB)
		}
		empty := fmt.Sprintf("%s%s", mb(f.emptyKB), ratio(float64(f.emptyKB), bEmpty))
		fmt.Fprintf(tw, "%s\t0\t%s\t\t\t\t\t≤ 8 MB: %s\n", f.bin, empty, yes(f.emptyKB <= 8*1024))
		for i, s := range f.sizes {
			per := f.perEntity(s)
			var bPer float64
			if base != nil && i < len(base.sizes) {
				bPer = base.perEntity(base.sizes[i])
			}
			quiet := s.quiet.Round(time.Second).String()
			if !s.quietOK {
				quiet = "not quiet in " + quiet
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.0f B%s\t%.0f/s\t%s\t≤ 1536 B: %s\n", f.bin, s.n, mb(s.anonKB), mb(s.rssKB), per, ratio(per, bPer),
				s.registered, quiet, yes(per <= 1536))
		}
	}
	tw.Flush() //nolint:errcheck // stdout
}
