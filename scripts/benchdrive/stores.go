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
// PostgreSQL, one after the other in the same run, driven the same way,
// so that the table can set each PostgreSQL figure beside SQLite's as a
// ratio. Per store, on a fresh database:
//
//  1. -transitions sessions registered pending by -clients clients
//     (registrations/s), then moved pending → running (transitions/s, the
//     p99 of one POST): the throughput part's figures;
//  2. for each size of -stores-n, sessions registered running up to that
//     many entities (registrations/s), one in 20 of all moved to failed
//     (an attention item each), then -samples scrapes (GET /metrics) and
//     -samples GET /api/attention (its default page of 50, the queue's
//     head), one after the other after one of each to warm up: median
//     and slowest.

// storeFigures are one store's figures.
type storeFigures struct {
	ran        bool
	name       string // "SQLite", "PostgreSQL"
	load       string // the 1-minute load average when the store's turn began
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
	bytes       int // the size of the last answer
}

// failEvery is the share of sessions moved to failed: one in failEvery.
const failEvery = 20

// stores runs the stores part: SQLite, then PostgreSQL (a throwaway
// cluster, or -pg-dsn).
func (r *runner) stores(ctx context.Context) error {
	say("stores: SQLite")
	if err := r.storeRun(ctx, "SQLite", storeConf{}, &r.res.sqlite); err != nil {
		return fmt.Errorf("stores, SQLite: %w", err)
	}
	if r.o.pgDSN == "" {
		say("stores: starting a throwaway PostgreSQL cluster (initdb, unix socket, fsync on)")
	}
	pg, err := startPG(ctx, r.o.pgDSN, 2*time.Minute)
	if err != nil {
		return fmt.Errorf("stores, PostgreSQL: %w", err)
	}
	r.pg = pg
	dsn, err := pg.database(ctx)
	if err != nil {
		return fmt.Errorf("stores, PostgreSQL: %w", err)
	}
	say("stores: PostgreSQL")
	err = r.storeRun(ctx, "PostgreSQL", storeConf{driver: "postgres", dsn: dsn}, &r.res.postgres)
	if dropErr := pg.drop(ctx, dsn); err == nil && dropErr != nil {
		err = dropErr
	}
	if err != nil {
		return fmt.Errorf("stores, PostgreSQL: %w", err)
	}
	return nil
}

// storeRun measures one daemon on st.
func (r *runner) storeRun(ctx context.Context, name string, st storeConf, out *storeFigures) error {
	*out = storeFigures{ran: true, name: name, load: loadAvg()}
	tag := "wd-" + strings.ToLower(name)
	w, err := startWatchdogOn(ctx, r.o.watchdog, filepath.Join(r.dir, tag), st, time.Minute)
	if err != nil {
		return err
	}
	r.live = append(r.live, w.child)
	defer w.stop(10 * time.Second)

	m, clients := r.o.moves, r.o.clients
	say("%s: registering %d pending sessions from %d clients", name, m, clients)
	if out.registered, err = w.registerSessions(ctx, 0, m, "pending", clients); err != nil {
		return err
	}
	say("%s: moving them pending → running", name)
	if out.moves, out.movesP99, err = w.moveSessions(ctx, 0, m, "pending", "running", nil, clients); err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	have, failed := m, 0
	failure := &reason{Code: "run.failed.exit_nonzero", Message: "exit 3"}
	for _, n := range r.o.storesN {
		sf := sizeFigures{n: n}
		if n > have {
			say("%s: registering %d more running sessions, up to %d", name, n-have, n)
			sf.added = n - have
			if sf.registered, err = w.registerSessions(ctx, have, n, "running", clients); err != nil {
				return err
			}
		}
		// One in failEvery of all n has failed: the newest ones, as many
		// as the earlier sizes have not failed yet.
		if k := n/failEvery - failed; k > 0 {
			say("%s: failing %d of them", name, k)
			if _, _, err := w.moveSessions(ctx, n-k, n, "running", "failed", failure, clients); err != nil {
				return fmt.Errorf("fail sessions: %w", err)
			}
			failed += k
		}
		have = n
		say("%s at %d entities: %d scrapes and %d attention reads", name, n, r.o.samples, r.o.samples)
		if sf.scrape, err = w.timedGets(ctx, "/metrics", r.o.samples, nil); err != nil {
			return err
		}
		var q struct {
			Total int `json:"total"`
		}
		if sf.attention, err = w.timedGets(ctx, "/api/attention", r.o.samples, &q); err != nil {
			return err
		}
		sf.items = q.Total
		out.sizes = append(out.sizes, sf)
	}
	return nil
}

// timedGets sends one GET of path to warm up, then samples more, one at a
// time, each answer read whole; into, when not nil, gets the last answer
// decoded.
func (w *watchdogd) timedGets(ctx context.Context, path string, samples int, into any) (reads, error) {
	var rd reads
	lat := make([]time.Duration, 0, samples)
	var last []byte
	for i := 0; i <= samples; i++ {
		t := time.Now()
		b, err := w.get(ctx, path)
		d := time.Since(t)
		if err != nil {
			return rd, err
		}
		if i > 0 {
			lat = append(lat, d)
		}
		last = b
	}
	rd.median, rd.max, rd.bytes = percentile(lat, 0.5), percentile(lat, 1), len(last)
	if into != nil {
		if err := json.Unmarshal(last, into); err != nil {
			return rd, fmt.Errorf("GET %s: decode answer: %w", path, err)
		}
	}
	return rd, nil
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
	fmt.Fprintln(w, "PostgreSQL beside SQLite (the same daemon, driven the same way, one after the other):")
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
			fmt.Fprintf(w, "note: %s: load average %s when its turn began\n", s.name, s.load)
		}
	}
	fmt.Fprintf(w, "note: reads are %d requests one at a time after one to warm up; one session in %d failed (the queue's total is in the table)\n", o.samples, failEvery)
	fmt.Fprintln(w, "note: ratios are PostgreSQL's over SQLite's: for a rate below 1 means PostgreSQL is slower, for a time above 1")
}
