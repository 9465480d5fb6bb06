package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// results are one run's figures.
type results struct {
	header              string
	wd, monit           watcher // at -n
	wdScale, monitScale watcher // at -scale-n
	wdBase              watcher // -baseline's binary at -n
	throughput          float64 // transitions per second
	throughputP99       time.Duration
	sqlite, postgres    storeFigures // the stores part
	pgVersion           string       // its server's version()
	flood               []floodFigures
	readers             []readerFigures
	memory              []memFigures
	fdlimit             *fdlimitFigures
	fleet               *fleetFigures
}

// header says what ran where, so a table pasted elsewhere keeps its context.
func header(o options) string {
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("watchdog bench, %s: %d CPUs, Linux %s\nwatchdog: %s\nmonit:    %s",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), strings.TrimSpace(string(kernel)),
		firstLine(o.watchdog, "version"), firstLine(o.monit, "-V"))
}

// firstLine is the first line bin prints with args, or why there is none.
func firstLine(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		return fmt.Sprintf("%s (%v)", bin, err)
	}
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

// row is one line of the table. A blank cell is a figure not measured.
type row struct {
	what, wd, monit, ratio, target, met string
}

func (res *results) rows(o options) []row {
	var rows []row
	if res.wd.ran {
		rows = append(rows, watcherRows(fmt.Sprintf("%d", res.wd.n), res.wd, res.monit, true)...)
	}
	if res.wdScale.ran {
		rows = append(rows, watcherRows(fmt.Sprintf("%d", res.wdScale.n), res.wdScale, res.monitScale, false)...)
		if res.wd.idle != nil && res.wdScale.idle != nil {
			r := row{what: fmt.Sprintf("CPU/s at %d ÷ at %d", res.wdScale.n, res.wd.n), target: "≤ 2"}
			if res.wd.idle.cpuMSPerS > 0 {
				g := res.wdScale.idle.cpuMSPerS / res.wd.idle.cpuMSPerS
				r.wd, r.met = fmt.Sprintf("%.2f", g), yes(g <= 2)
			} else {
				r.wd = "no CPU at " + fmt.Sprint(res.wd.n) // no tick in the window: see the notes
			}
			rows = append(rows, r)
		}
	}
	if res.throughput > 0 {
		rows = append(rows,
			row{what: fmt.Sprintf("POST transitions/s, %d clients", o.clients), wd: fmt.Sprintf("%.0f", res.throughput), target: "≥ 5000", met: yes(res.throughput >= 5000)},
			row{what: "  p99 of one POST", wd: ms(res.throughputP99)})
	}
	return rows
}

// watcherRows are the idle and death rows of one size; side says whether
// monit's figures are the side-by-side ones the issue sets targets on.
func watcherRows(size string, wd, mo watcher, side bool) []row {
	var rows []row
	if wd.idle != nil {
		cpu := row{what: "CPU per s of wall, " + size + " procs", wd: fmt.Sprintf("%.2f ms/s", wd.idle.cpuMSPerS)}
		rss := row{what: "  RSS at window end", wd: mb(wd.idle.rssKB), target: "≤ 20 MB", met: yes(wd.idle.rssKB <= 20*1024)}
		hwm := row{what: "  peak RSS (VmHWM)", wd: mb(wd.idle.hwmKB)}
		if mo.idle != nil {
			cpu.monit, rss.monit, hwm.monit = fmt.Sprintf("%.2f ms/s", mo.idle.cpuMSPerS), mb(mo.idle.rssKB), mb(mo.idle.hwmKB)
			if mo.idle.cpuMSPerS > 0 {
				r := wd.idle.cpuMSPerS / mo.idle.cpuMSPerS
				cpu.ratio = fmt.Sprintf("%.3f", r)
				if side {
					cpu.target, cpu.met = "≤ 0.1 of monit", yes(r <= 0.1)
				}
			}
			if mo.idle.rssKB > 0 {
				rss.ratio = fmt.Sprintf("%.2f", float64(wd.idle.rssKB)/float64(mo.idle.rssKB))
			}
			if mo.idle.hwmKB > 0 {
				hwm.ratio = fmt.Sprintf("%.2f", float64(wd.idle.hwmKB)/float64(mo.idle.hwmKB))
			}
		}
		rows = append(rows, cpu)
		rows = append(rows, quietRows(wd.idle, mo.idle, side)...)
		rows = append(rows, rss, hwm)
	}
	if wd.deaths != nil {
		d := wd.deaths
		med := row{what: "death → recorded, median, " + size + " procs", wd: ms(d.median()), target: "≤ 50 ms", met: yes(len(d.latencies) > 0 && d.median() <= 50*time.Millisecond)}
		p99 := row{what: "  p99", wd: ms(d.p99()), target: "≤ 200 ms", met: yes(len(d.latencies) > 0 && d.p99() <= 200*time.Millisecond)}
		seen := row{what: "  detected of killed", wd: fmt.Sprintf("%d/%d", len(d.latencies), d.killed), target: "all", met: yes(d.missed == 0 && d.killed > 0)}
		if m := mo.deaths; m != nil {
			med.monit, p99.monit, seen.monit = ms(m.median()), ms(m.p99()), fmt.Sprintf("%d/%d", len(m.latencies), m.killed)
			if m.median() > 0 {
				med.ratio = fmt.Sprintf("%.3f", float64(d.median())/float64(m.median()))
			}
			if m.p99() > 0 {
				p99.ratio = fmt.Sprintf("%.3f", float64(d.p99())/float64(m.p99()))
			}
			if side {
				med.target = "≤ 50 ms and < monit"
				med.met = yes(len(d.latencies) > 0 && d.median() <= 50*time.Millisecond && d.median() < m.median())
			}
		}
		rows = append(rows, med, p99, seen)
	}
	if a := wd.adopted; a != nil {
		rows = append(rows,
			row{what: "registered → watched by pidfd, median", wd: ms(a.median()), target: "≤ 1 s", met: yes(len(a.latencies) > 0 && a.median() <= time.Second)},
			row{what: "  max", wd: ms(percentile(a.latencies, 1)), target: "≤ 1 s", met: yes(len(a.latencies) > 0 && a.missed == 0 && percentile(a.latencies, 1) <= time.Second)})
	}
	if e := wd.enforced; e != nil {
		rows = append(rows,
			row{what: "ended after death + grace, median", wd: ms(e.median()), target: "≤ 1 s", met: yes(len(e.latencies) > 0 && e.median() <= time.Second)},
			row{what: "  max", wd: ms(percentile(e.latencies, 1)), target: "≤ 1 s", met: yes(len(e.latencies) > 0 && e.missed == 0 && percentile(e.latencies, 1) <= time.Second)},
			row{what: "  ended of killed", wd: fmt.Sprintf("%d/%d", len(e.latencies), e.killed), target: "all", met: yes(e.missed == 0 && e.killed > 0)})
	}
	return rows
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mb(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }

// minTicks is the fewest clock ticks (10 ms each, usually) of CPU in a
// window that make its figure worth comparing: below it one tick more or
// less moves the figure by a fifth or more, and the notes say so.
const minTicks = 5

// print writes the header, the table and the notes.
func (res *results) print(w io.Writer, o options) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, res.header)
	fmt.Fprintln(w, "One run on one machine; on a shared or busy machine the figures are indicative.")
	if rows := res.rows(o); len(rows) > 0 {
		fmt.Fprintln(w)
		tw := newTable(w)
		fmt.Fprintln(tw, "measurement\twatchdog\tmonit\twatchdog/monit\tissue 13 target\tmet")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.what, dash(r.wd), dash(r.monit), dash(r.ratio), dash(r.target), dash(r.met))
		}
		tw.Flush()
	}
	res.printBaseline(w, o)
	var notes []string
	for _, x := range []struct {
		who string
		w   watcher
	}{{"watchdog", res.wd}, {"monit", res.monit}, {"watchdog", res.wdScale}, {"monit", res.monitScale}} {
		if !x.w.ran {
			continue
		}
		if x.w.idle != nil {
			notes = append(notes, fmt.Sprintf("%s at %d: load average %s when its window began", x.who, x.w.n, x.w.idle.load))
			// Anonymous memory is what the watcher holds; file-backed is
			// mostly its binary's pages, which the page cache decides.
			notes = append(notes, fmt.Sprintf("%s at %d: RSS %s = anon %s + file-backed %s", x.who, x.w.n, mb(x.w.idle.rssKB), mb(x.w.idle.anonKB), mb(x.w.idle.fileKB)))
			if x.w.idle.ticks < minTicks {
				notes = append(notes, fmt.Sprintf("%s at %d: CPU counted from %d clock ticks only, too few to compare closely: raise -window", x.who, x.w.n, x.w.idle.ticks))
			}
		}
		if x.w.note != "" {
			notes = append(notes, fmt.Sprintf("%s at %d: %s", x.who, x.w.n, x.w.note))
		}
		if x.w.deaths != nil && x.w.deaths.missed > 0 {
			notes = append(notes, fmt.Sprintf("%s at %d: %d deaths not seen within %s (left out of the latencies)", x.who, x.w.n, x.w.deaths.missed, o.detectTimeout))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, "note:", n)
		}
	}
	if res.wd.ran || res.wdScale.ran {
		fmt.Fprintf(w, "\nwindow %s after a %s settle; %d kills %s apart", o.window, o.settle, o.kills, o.killGap)
	}
	fmt.Fprintln(w, "\nhow to read this: docs/bench.md")
}

// newTable is the tab writer of every table the driver prints.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quietRows are the quiet figures of one idle window (quiet.go): what the
// issue "quiet when nothing happens" asks at 1,000 processes.
func quietRows(wd, mo *idle, side bool) []row {
	q := wd.quiet
	writes := row{what: "  disk writes in window (write_bytes)", wd: fmt.Sprintf("%d B", q.writeBytes)}
	calls := row{what: "  write calls in window (syscw)", wd: fmt.Sprint(q.syscw)}
	cs := row{what: "  voluntary ctx switches/s", wd: fmt.Sprintf("%.1f", q.volCSPerS)}
	fs := row{what: "  fsync+fdatasync (strace)", wd: fsyncs(q)}
	if side {
		writes.target, writes.met = "0", yes(q.writeBytes == 0)
		cs.target, cs.met = "≤ 20", yes(q.volCSPerS <= 20)
		if q.fsyncs >= 0 {
			fs.target, fs.met = "0", yes(q.fsyncs == 0)
		}
	}
	if mo != nil {
		m := mo.quiet
		writes.monit, calls.monit, cs.monit, fs.monit = fmt.Sprintf("%d B", m.writeBytes), fmt.Sprint(m.syscw), fmt.Sprintf("%.1f", m.volCSPerS), fsyncs(m)
		if m.volCSPerS > 0 {
			cs.ratio = fmt.Sprintf("%.3f", q.volCSPerS/m.volCSPerS)
		}
	}
	return []row{writes, calls, cs, fs}
}

// fsyncs shows a strace count and its window.
func fsyncs(q quiet) string {
	if q.fsyncs < 0 {
		return "not counted"
	}
	return fmt.Sprintf("%d in %s", q.fsyncs, q.straceFor)
}

// printBaseline prints this binary's idle figures beside -baseline's,
// measured on the same processes one after the other.
func (res *results) printBaseline(w io.Writer, o options) {
	b, a := res.wdBase, res.wd
	if !b.ran || b.idle == nil || a.idle == nil {
		return
	}
	ratio := func(after, before float64) string {
		if before == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", after/before)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "idle at %d processes, this binary beside -baseline %s (same processes, one after the other)\n", a.n, o.baseline)
	tw := newTable(w)
	fmt.Fprintln(tw, "measurement\tbaseline\tthis\tthis/baseline")
	fmt.Fprintf(tw, "CPU per s of wall\t%.2f ms/s\t%.2f ms/s\t%s\n", b.idle.cpuMSPerS, a.idle.cpuMSPerS, ratio(a.idle.cpuMSPerS, b.idle.cpuMSPerS))
	fmt.Fprintf(tw, "voluntary ctx switches/s\t%.1f\t%.1f\t%s\n", b.idle.quiet.volCSPerS, a.idle.quiet.volCSPerS, ratio(a.idle.quiet.volCSPerS, b.idle.quiet.volCSPerS))
	fmt.Fprintf(tw, "disk writes in window\t%d B\t%d B\t%s\n", b.idle.quiet.writeBytes, a.idle.quiet.writeBytes, ratio(float64(a.idle.quiet.writeBytes), float64(b.idle.quiet.writeBytes)))
	fmt.Fprintf(tw, "write calls in window\t%d\t%d\t%s\n", b.idle.quiet.syscw, a.idle.quiet.syscw, ratio(float64(a.idle.quiet.syscw), float64(b.idle.quiet.syscw)))
	fmt.Fprintf(tw, "fsync+fdatasync\t%s\t%s\t%s\n", fsyncs(b.idle.quiet), fsyncs(a.idle.quiet), ratio(float64(a.idle.quiet.fsyncs), float64(b.idle.quiet.fsyncs)))
	if b.deaths != nil && a.deaths != nil {
		fmt.Fprintf(tw, "death → recorded, median\t%s\t%s\t%s\n", ms(b.deaths.median()), ms(a.deaths.median()), ratio(float64(a.deaths.median()), float64(b.deaths.median())))
	}
	tw.Flush()
}
