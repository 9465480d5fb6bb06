package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	for _, n := range r.o.memoryN {
		for _, s := range sides {
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
		for _, s := range sides {
			pid, err := pidOf(s)
			if err != nil {
				return err
			}
			last := &s.out.sizes[len(s.out.sizes)-1]
			if last.anonKB, last.rssKB, err = anonAfter(ctx, pid, r.o.settle); err != nil {
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
	fmt.Fprintf(w, "\nmemory: RssAnon of watchdog serve on SQLite, empty and after registering running sessions over the API (%d clients), read from %s after the last write\n"+
		"until settled (no reading 1%% lower for 10 s; the median of the last three); per entity = (RssAnon at n − empty) ÷ n; ×: this ÷ baseline\n", o.clients, o.settle)
	tw := newTable(w)
	fmt.Fprintln(tw, "binary\tsessions\tRssAnon\tVmRSS\tper entity\tregister/s\ttarget")
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
		fmt.Fprintf(tw, "%s\t0\t%s\t\t\t\t≤ 8 MB: %s\n", f.bin, empty, yes(f.emptyKB <= 8*1024))
		for i, s := range f.sizes {
			per := f.perEntity(s)
			var bPer float64
			if base != nil && i < len(base.sizes) {
				bPer = base.perEntity(base.sizes[i])
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.0f B%s\t%.0f/s\t≤ 1536 B: %s\n", f.bin, s.n, mb(s.anonKB), mb(s.rssKB), per, ratio(per, bPer),
				s.registered, yes(per <= 1536))
		}
	}
	tw.Flush() //nolint:errcheck // stdout
}
