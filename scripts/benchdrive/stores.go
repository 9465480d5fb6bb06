package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// The stores part (issue 15): the same daemon on SQLite and on
// PostgreSQL, driven the same way, so that the table can set each
// PostgreSQL figure beside SQLite's as a ratio. Both daemons run at once,
// each on a fresh database, and every step is taken on one and then at
// once on the other: on a shared machine whose load drifts, the two
// figures of a row are minutes closer than with one store after the other.
// The steps:
//
//  1. -transitions sessions registered pending by -clients clients
//     (registrations/s), then moved pending → running (transitions/s, the
//     p99 of one POST): the throughput part's figures;
//  2. for each size of -stores-n, sessions registered running up to that
//     many entities (registrations/s), one in 20 of all moved to failed
//     (one attention item each: see elsewhere), then -samples scrapes
//     (GET /metrics) and -samples GET /api/attention (its default page
//     of 50, the queue's head), after one of each to warm up, the two
//     daemons asked in turn: median and slowest.

// storeFigures are one store's figures.
type storeFigures struct {
	ran        bool
	name       string // "SQLite", "PostgreSQL"
	load       string // the 1-minute load average when its transitions began
	registered float64
	moves      float64 // transitions/s
	movesP99   time.Duration
	sizes      []sizeFigures
}

// sizeFigures are one store's figures at one size.
type sizeFigures struct {
	n          int
	added      int     // entities registered to reach n
	registered float64 // their registrations/s; 0 when none was added
	items      int     // the queue's total, as GET /api/attention says
	scrape     reads
	attention  reads
}

// reads are the timings of -samples identical requests.
type reads struct {
	median, max time.Duration
}

// failEvery is the share of sessions moved to failed: one in failEvery,
// those registered on host elsewhere.
const failEvery = 20

// elsewhere is the host_id of the sessions that fail: a host whose daemon
// never ran, so no daemon probes them (a session without pid that a
// daemon probes gets a second attention item, liveness unknown, or not,
// as the probe's lag falls) nor judges them (only hosts seen alive once
// are): one item each, on both stores.
const elsewhere = "bench-elsewhere"

// hostOf is the host_id of the i-th session of the stores part.
func hostOf(i int) string {
	if i%failEvery == failEvery-1 {
		return elsewhere
	}
	return ""
}

// elsewhereIn are the sessions of host elsewhere among from…to-1.
func elsewhereIn(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		if hostOf(i) == elsewhere {
			out = append(out, i)
		}
	}
	return out
}

// storeSide is one of the two daemons of the stores part.
type storeSide struct {
	w   *watchdogd
	out *storeFigures
}

// stores runs the stores part: a daemon on SQLite and one on PostgreSQL
// (a database on a throwaway cluster, or on -pg-dsn).
func (r *runner) stores(ctx context.Context) error {
	if r.o.pgDSN == "" {
		say("stores: starting a throwaway PostgreSQL cluster (initdb, unix socket, fsync on)")
	}
	pg, err := startPG(ctx, r.o.pgDSN, 2*time.Minute)
	if err != nil {
		return fmt.Errorf("stores, PostgreSQL: %w", err)
	}
	r.pg = pg
	if r.res.pgVersion, err = pg.version(ctx); err != nil {
		return fmt.Errorf("stores, PostgreSQL: %w", err)
	}
	dsn, err := pg.database(ctx)
	if err != nil {
		return fmt.Errorf("stores, PostgreSQL: %w", err)
	}
	err = r.storesOn(ctx, storeConf{driver: "postgres", dsn: dsn})
	if dropErr := pg.drop(ctx, dsn); err == nil && dropErr != nil {
		err = fmt.Errorf("stores, PostgreSQL: %w", dropErr)
	}
	return err
}

// storesOn runs the steps on a daemon on SQLite and one on pg.
func (r *runner) storesOn(ctx context.Context, pg storeConf) error {
	var sides []storeSide
	for _, s := range []struct {
		name string
		st   storeConf
		out  *storeFigures
	}{{"SQLite", storeConf{}, &r.res.sqlite}, {"PostgreSQL", pg, &r.res.postgres}} {
		say("stores: watchdog serve on %s", s.name)
		w, err := startWatchdogOn(ctx, r.o.watchdog, filepath.Join(r.dir, "wd-"+strings.ToLower(s.name)), s.st, time.Minute)
		if err != nil {
			return fmt.Errorf("stores, %s: %w", s.name, err)
		}
		r.live = append(r.live, w.child)
		defer w.stop(10 * time.Second)
		*s.out = storeFigures{ran: true, name: s.name}
		sides = append(sides, storeSide{w: w, out: s.out})
	}
	each := func(what string, fn func(storeSide) error) error {
		for _, s := range sides {
			say("%s: %s", s.out.name, what)
			if err := fn(s); err != nil {
				return fmt.Errorf("stores, %s: %s: %w", s.out.name, what, err)
			}
		}
		return nil
	}

	m, clients := r.o.moves, r.o.clients
	err := each(fmt.Sprintf("registering %d pending sessions from %d clients", m, clients), func(s storeSide) (err error) {
		s.out.registered, err = s.w.registerSessions(ctx, 0, m, "pending", hostOf, clients)
		return err
	})
	if err != nil {
		return err
	}
	err = each("moving them pending → running", func(s storeSide) (err error) {
		s.out.load = loadAvg()
		s.out.moves, s.out.movesP99, err = s.w.moveSessions(ctx, span(0, m), "pending", "running", nil, clients)
		return err
	})
	if err != nil {
		return err
	}
	have, failedUpTo := m, 0
	failure := &reason{Code: "run.failed.exit_nonzero", Message: "exit 3"}
	for _, n := range r.o.storesN {
		sizes := make([]sizeFigures, len(sides))
		for i := range sizes {
			sizes[i] = sizeFigures{n: n}
		}
		if n > have {
			i := 0
			err := each(fmt.Sprintf("registering %d more running sessions, up to %d", n-have, n), func(s storeSide) (err error) {
				sizes[i].added = n - have
				sizes[i].registered, err = s.w.registerSessions(ctx, have, n, "running", hostOf, clients)
				i++
				return err
			})
			if err != nil {
				return err
			}
		}
		// The sessions of host elsewhere not failed yet fail: one in
		// failEvery of all n.
		if fail := elsewhereIn(failedUpTo, n); len(fail) > 0 {
			err := each(fmt.Sprintf("failing the %d of them on host %s", len(fail), elsewhere), func(s storeSide) error {
				_, _, err := s.w.moveSessions(ctx, fail, "running", "failed", failure, clients)
				return err
			})
			if err != nil {
				return err
			}
		}
		have, failedUpTo = n, n
		ws := make([]*watchdogd, len(sides))
		for i, s := range sides {
			ws[i] = s.w
		}
		say("stores at %d entities: %d scrapes and %d attention reads of each daemon, in turn", n, r.o.samples, r.o.samples)
		scrapes, _, err := timedGets(ctx, ws, "/metrics", r.o.samples)
		if err != nil {
			return fmt.Errorf("stores: %w", err)
		}
		queues, last, err := timedGets(ctx, ws, "/api/attention", r.o.samples)
		if err != nil {
			return fmt.Errorf("stores: %w", err)
		}
		for i, s := range sides {
			var q struct {
				Total int `json:"total"`
			}
			if err := json.Unmarshal(last[i], &q); err != nil {
				return fmt.Errorf("stores, %s: GET /api/attention: decode answer: %w", s.out.name, err)
			}
			sizes[i].scrape, sizes[i].attention, sizes[i].items = scrapes[i], queues[i], q.Total
			s.out.sizes = append(s.out.sizes, sizes[i])
		}
	}
	return nil
}

// timedGets sends one GET of path to each daemon to warm up, then samples
// more, the daemons in turn, one request at a time, each answer read
// whole; it returns each daemon's timings and last answer.
func timedGets(ctx context.Context, ws []*watchdogd, path string, samples int) ([]reads, [][]byte, error) {
	lat := make([][]time.Duration, len(ws))
	last := make([][]byte, len(ws))
	for k := 0; k <= samples; k++ {
		for i, w := range ws {
			t := time.Now()
			b, err := w.get(ctx, path)
			d := time.Since(t)
			if err != nil {
				return nil, nil, err
			}
			if k > 0 {
				lat[i] = append(lat[i], d)
			}
			last[i] = b
		}
	}
	out := make([]reads, len(ws))
	for i := range ws {
		out[i] = reads{median: percentile(lat[i], 0.5), max: percentile(lat[i], 1)}
	}
	return out, last, nil
}

// get is one GET, its body read whole; a non-2xx answer is an error.
func (w *watchdogd) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: read answer: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// storeRow is one line of the stores table. A blank cell is a figure not
// measured.
type storeRow struct {
	what, sqlite, pg, ratio string
}

// storeRows sets the two stores' figures side by side; the ratio is
// PostgreSQL's over SQLite's (for a rate, below 1 is PostgreSQL slower;
// for a time, above 1 is).
func (res *results) storeRows(o options) []storeRow {
	s, p := res.sqlite, res.postgres
	rate := func(what string, a, b float64) storeRow {
		r := storeRow{what: what, sqlite: perS(a), pg: perS(b)}
		if a > 0 && b > 0 {
			r.ratio = fmt.Sprintf("%.2f", b/a)
		}
		return r
	}
	dur := func(what string, a, b time.Duration) storeRow {
		r := storeRow{what: what}
		if a > 0 {
			r.sqlite = ms(a)
		}
		if b > 0 {
			r.pg = ms(b)
		}
		if a > 0 && b > 0 {
			r.ratio = fmt.Sprintf("%.2f", float64(b)/float64(a))
		}
		return r
	}
	rows := []storeRow{
		rate(fmt.Sprintf("register/s, %d clients, 0 → %d pending", o.clients, o.moves), s.registered, p.registered),
		rate(fmt.Sprintf("POST transitions/s, %d clients", o.clients), s.moves, p.moves),
		dur("  p99 of one POST", s.movesP99, p.movesP99),
	}
	for i := 0; i < max(len(s.sizes), len(p.sizes)); i++ {
		var a, b sizeFigures
		if i < len(s.sizes) {
			a = s.sizes[i]
		}
		if i < len(p.sizes) {
			b = p.sizes[i]
		}
		n := max(a.n, b.n)
		if a.added > 0 || b.added > 0 {
			rows = append(rows, rate(fmt.Sprintf("register/s, %d clients, up to %d running", o.clients, n), a.registered, b.registered))
		}
		items := storeRow{what: fmt.Sprintf("  attention items at %d", n)}
		if a.n > 0 {
			items.sqlite = fmt.Sprint(a.items)
		}
		if b.n > 0 {
			items.pg = fmt.Sprint(b.items)
		}
		rows = append(rows,
			dur(fmt.Sprintf("scrape /metrics, median, %d entities", n), a.scrape.median, b.scrape.median),
			dur("  slowest", a.scrape.max, b.scrape.max),
			dur(fmt.Sprintf("GET /api/attention, median, %d entities", n), a.attention.median, b.attention.median),
			dur("  slowest", a.attention.max, b.attention.max),
			items)
	}
	return rows
}

func perS(v float64) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f/s", v)
}

// printStores writes the stores table and its notes.
func (res *results) printStores(w io.Writer, o options) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "PostgreSQL beside SQLite (the same daemon, driven the same way, in the same minutes):")
	if res.pgVersion != "" {
		fmt.Fprintln(w, "postgres:", res.pgVersion)
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "measurement\tSQLite\tPostgreSQL\tPostgreSQL/SQLite")
	for _, r := range res.storeRows(o) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.what, dash(r.sqlite), dash(r.pg), dash(r.ratio))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, s := range []storeFigures{res.sqlite, res.postgres} {
		if s.ran {
			fmt.Fprintf(w, "note: %s: load average %s when its transitions began\n", s.name, s.load)
		}
	}
	fmt.Fprintf(w, "note: both daemons ran at once, each step taken on one then the other; reads are %d requests one at a time, the two daemons in turn, after one to warm up\n", o.samples)
	fmt.Fprintf(w, "note: one session in %d, on a host with no daemon (%s), failed: one attention item each\n", failEvery, elsewhere)
	fmt.Fprintln(w, "note: ratios are PostgreSQL's over SQLite's: for a rate below 1 means PostgreSQL is slower, for a time above 1")
}
