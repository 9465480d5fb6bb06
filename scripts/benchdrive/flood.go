package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The flood part (issue "bounded when everything does", ADR-0034): the
// daemon under -flood-n slow-header connections, opened once and held
// ("held", the figure) or re-opened whenever the daemon closes
// one ("flood", the harsher), run under
// `prlimit --nofile=-flood-nofile`, against the same daemon with no
// flood in the same run; -flood-baseline measures a second binary (the
// one before a change) the same way. What is measured is what a
// supervisor and an agent see: GET /readyz and POST /api/v1/entities, each
// on a new connection (as `watchdog register --server` makes one), with a
// deadline of -flood-timeout (the 5 s).

// floodFigures are one daemon's figures under one load.
type floodFigures struct {
	bin, load               string
	readyz, healthz, writes reqFigures
	shed                    string // watchdog_http_connections_shed_total after the run, "-" if absent
	connected               int64  // slow connections opened (reconnections included)
}

// reqFigures are the outcomes of one kind of request.
type reqFigures struct {
	n, ok, timeouts, failed int
	lat                     []time.Duration // of the answered ones, any status
	okLat                   []time.Duration // of the 2xx ones
	firstErr                string
}

func (f *reqFigures) add(d time.Duration, status int, err error, timeout time.Duration) {
	f.n++
	switch {
	case err != nil && d >= timeout:
		f.timeouts++
	case err != nil:
		f.failed++
		if f.firstErr == "" {
			f.firstErr = err.Error()
		}
	case status/100 != 2:
		f.failed++
		f.lat = append(f.lat, d)
		if f.firstErr == "" {
			f.firstErr = "status " + strconv.Itoa(status)
		}
	default:
		f.ok++
		f.lat = append(f.lat, d)
		f.okLat = append(f.okLat, d)
	}
}

// okWithin is the share of the requests answered 2xx within d, as a
// percentage.
func (f *reqFigures) okWithin(d time.Duration) string {
	if f.n == 0 {
		return "-"
	}
	n := 0
	for _, l := range f.okLat {
		if l <= d {
			n++
		}
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(f.n))
}

// flood runs the part: each binary without and with the flood.
func (r *runner) flood(ctx context.Context) error {
	bins := []struct{ tag, bin string }{{"this", r.o.watchdog}}
	if r.o.floodBaseline != "" {
		bins = append(bins, struct{ tag, bin string }{"baseline", r.o.floodBaseline})
	}
	for _, b := range bins {
		for _, load := range strings.Split(r.o.floodLoads, ",") {
			n := r.o.floodN
			if load == "bodies" {
				n = r.o.floodBodies
			}
			say("flood: %s binary, load %s (%d slow connections, nofile %d, %s)", b.tag, load, n, r.o.floodNofile, r.o.floodFor)
			fig, err := r.floodOne(ctx, b.tag, b.bin, load)
			if err != nil {
				return err
			}
			r.res.flood = append(r.res.flood, fig)
		}
	}
	return nil
}

// floodOne starts a daemon, measures it for -flood-for (with the slow
// connections held, and re-opened as the daemon closes them, when
// flood), and stops it.
func (r *runner) floodOne(ctx context.Context, tag, bin, load string) (floodFigures, error) {
	flood := load != "none"
	fig := floodFigures{bin: tag, load: load, shed: "-"}
	dir := filepath.Join(r.dir, "flood-"+tag+"-"+load)
	prefix := []string{"prlimit", "--nofile=" + strconv.Itoa(r.o.floodNofile), "--"}
	w, err := startWatchdogUnder(ctx, prefix, bin, dir, storeConf{}, time.Minute)
	if err != nil {
		return fig, err
	}
	r.live = append(r.live, w.child)
	defer w.stop(10 * time.Second)
	u, err := url.Parse(w.base)
	if err != nil {
		return fig, err
	}

	fctx, stopFlood := context.WithCancel(ctx)
	defer stopFlood()
	var slow sync.WaitGroup
	var connected atomic.Int64
	if flood {
		// Opened before the clock starts, each goroutine holding one
		// connection and opening another when the daemon closes it.
		var opened sync.WaitGroup
		n := r.o.floodN
		if load == "bodies" {
			n = r.o.floodBodies
		}
		opened.Add(n)
		for range n {
			slow.Go(func() { slowClient(fctx, u.Host, load, &opened, &connected) })
		}
		waitCh := make(chan struct{})
		go func() { opened.Wait(); close(waitCh) }()
		select {
		case <-waitCh:
		case <-time.After(2 * time.Minute):
			return fig, fmt.Errorf("flood: %d slow connections not all opened in 2m", n)
		case <-ctx.Done():
			return fig, ctx.Err()
		}
	}

	// The measurement: a probe every 50 ms, and -clients writers, each
	// request on a new connection, for -flood-for.
	mctx, stop := context.WithTimeout(ctx, r.o.floodFor)
	defer stop()
	var mu sync.Mutex
	var clients sync.WaitGroup
	clients.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-mctx.Done():
				return
			case <-t.C:
			}
			d, code, err := timedRequest(ctx, http.MethodGet, w.base+"/readyz", nil, r.o.floodTimeout)
			mu.Lock()
			fig.readyz.add(d, code, err, r.o.floodTimeout)
			mu.Unlock()
			d, code, err = timedRequest(ctx, http.MethodGet, w.base+"/healthz", nil, r.o.floodTimeout)
			mu.Lock()
			fig.healthz.add(d, code, err, r.o.floodTimeout)
			mu.Unlock()
		}
	})
	var seq atomic.Int64
	for range r.o.clients {
		clients.Go(func() {
			for mctx.Err() == nil {
				body := fmt.Sprintf(`{"type":"session","id":"flood-%s-%d","lifecycle":"running"}`, load, seq.Add(1))
				d, code, err := timedRequest(ctx, http.MethodPost, w.base+"/api/v1/entities", []byte(body), r.o.floodTimeout)
				mu.Lock()
				fig.writes.add(d, code, err, r.o.floodTimeout)
				mu.Unlock()
			}
		})
	}
	clients.Wait()
	fig.connected = connected.Load()
	stopFlood()
	slow.Wait()
	if v, err := w.scrapeSum("watchdog_http_connections_shed_total"); err == nil {
		fig.shed = v
	}
	return fig, nil
}

// slowClient holds one slow connection to addr until ctx ends: a
// request's headers never finished (load held, flood), or a POST's whole
// headers announcing a 200,000-byte body then sent a byte a second
// (bodies, issue 37's attack). It opens a new one whenever the daemon
// closes it, except when held; opened is told once the first is open.
func slowClient(ctx context.Context, addr, load string, opened *sync.WaitGroup, connected *atomic.Int64) {
	first := true
	defer func() {
		if first {
			opened.Done()
		}
	}()
	d := net.Dialer{Timeout: 5 * time.Second}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		connected.Add(1)
		stop := context.AfterFunc(ctx, func() { c.Close() })
		start := "POST /api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
		if load == "bodies" {
			start = "POST /api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{"
		}
		_, err = c.Write([]byte(start))
		if first {
			first = false
			opened.Done()
		}
		if err == nil && load == "bodies" {
			go func() { // a byte a second until the write fails
				for ctx.Err() == nil {
					time.Sleep(time.Second)
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}()
		}
		if err == nil {
			_, _ = io.Copy(io.Discard, c) // until the daemon closes it
		}
		stop()
		c.Close()
		if load == "held" {
			return
		}
	}
}

// timedRequest makes one request on a new connection and returns how
// long it took to the end of the answer, and its status.
func timedRequest(ctx context.Context, method, url string, body []byte, timeout time.Duration) (time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return time.Since(start), 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), resp.StatusCode, err
}

// scrapeSum reads every series of one metric family from /metrics,
// "reason=value" joined by spaces; an error if the family is absent.
func (w *watchdogd) scrapeSum(name string) (string, error) {
	resp, err := w.http.Get(w.base + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var parts []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+"{"); ok {
			labels, value, _ := strings.Cut(rest, "} ")
			_, v, _ := strings.Cut(labels, "=")
			parts = append(parts, strings.Trim(v, `"`)+"="+value)
		}
	}
	if len(parts) == 0 {
		return "", errors.New(name + ": absent")
	}
	return strings.Join(parts, " "), nil
}

// printFlood prints the flood part's table.
func (res *results) printFlood(w io.Writer, o options) {
	if len(res.flood) == 0 {
		return
	}
	fmt.Fprintf(w, "\nflood: %d slow-header connections (held: opened once; flood: re-opened whenever closed), or %d slow-body ones (bodies: whole headers, Content-Length 200000, then a byte a second; re-opened whenever closed), daemon under prlimit --nofile=%d, %s per row;\n"+
		"GET /readyz then /healthz every 50 ms and POST /api/v1/entities from %d clients, each on a new connection, deadline %s\n",
		o.floodN, o.floodBodies, o.floodNofile, o.floodFor, o.clients, o.floodTimeout)
	tw := newTable(w)
	fmt.Fprintln(tw, "binary\tload\treadyz ok/n\t≤1 s\ttimeouts\tfailed\tp50\tp99\thealthz ≤1 s\twrites ok/n\ttimeouts\tfailed\tp50\tp99\tslow conns opened\tshed")
	var base [2]time.Duration // the "none" row's p99s of the binary before
	for _, f := range res.flood {
		rp, wp := percentile(f.readyz.lat, 0.99), percentile(f.writes.lat, 0.99)
		if f.load == "none" {
			base = [2]time.Duration{rp, wp}
		}
		ratio := func(v, b time.Duration) string {
			if f.load == "none" || b == 0 {
				return ms(v)
			}
			return fmt.Sprintf("%s (×%.1f)", ms(v), float64(v)/float64(b))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%d\t%d\t%s\t%s\t%s (%d)\t%d/%d\t%d\t%d\t%s\t%s\t%d\t%s\n", f.bin, f.load,
			f.readyz.ok, f.readyz.n, f.readyz.okWithin(time.Second), f.readyz.timeouts, f.readyz.failed, ms(percentile(f.readyz.lat, 0.5)), ratio(rp, base[0]),
			f.healthz.okWithin(time.Second), f.healthz.n,
			f.writes.ok, f.writes.n, f.writes.timeouts, f.writes.failed, ms(percentile(f.writes.lat, 0.5)), ratio(wp, base[1]),
			f.connected, f.shed)
	}
	tw.Flush() //nolint:errcheck // stdout
	for _, f := range res.flood {
		for _, e := range []struct {
			what string
			f    reqFigures
		}{{"readyz", f.readyz}, {"healthz", f.healthz}, {"writes", f.writes}} {
			if e.f.firstErr != "" {
				fmt.Fprintf(w, "  %s %s %s: first failure: %s\n", f.bin, f.load, e.what, e.f.firstErr)
			}
		}
	}
	fmt.Fprintln(w, "  p50/p99 over the answered requests (×: against the same binary with no load); a timeout is a request with no answer by the deadline")
}

// floodDefaults are the flood part's flags (the figures).
func floodFlags(fs interface {
	IntVar(p *int, name string, value int, usage string)
	DurationVar(p *time.Duration, name string, value time.Duration, usage string)
	StringVar(p *string, name string, value string, usage string)
}, o *options) {
	fs.IntVar(&o.floodN, "flood-n", 4200, "slow-header connections of the flood part")
	fs.StringVar(&o.floodLoads, "flood-loads", "none,held,flood,bodies", "the flood part's loads, comma-separated: none, held, flood, bodies")
	fs.IntVar(&o.floodBodies, "flood-bodies", 1100, "slow-body connections of the flood part's bodies load")
	fs.IntVar(&o.floodNofile, "flood-nofile", 4096, "the daemon's file-descriptor limit in the flood part (prlimit --nofile)")
	fs.DurationVar(&o.floodFor, "flood-for", 20*time.Second, "how long the flood part measures each daemon under each load")
	fs.DurationVar(&o.floodTimeout, "flood-timeout", 5*time.Second, "the deadline of one request of the flood part")
	fs.StringVar(&o.floodBaseline, "flood-baseline", "", "a second watchdog binary the flood part measures the same way (the one before a change)")
}

// checkFlood checks the flood part's flags.
func checkFlood(o options) error {
	if o.floodN < 1 || o.floodBodies < 1 || o.floodNofile < 64 || o.floodFor <= 0 || o.floodTimeout <= 0 {
		return errors.New("-flood-n and -flood-bodies must be positive, -flood-nofile at least 64, -flood-for and -flood-timeout positive")
	}
	for _, l := range strings.Split(o.floodLoads, ",") {
		if !slices.Contains([]string{"none", "held", "flood", "bodies"}, l) {
			return fmt.Errorf("-flood-loads: %q is not one of none, held, flood, bodies", l)
		}
	}
	if o.floodBaseline != "" {
		if _, err := os.Stat(o.floodBaseline); err != nil {
			return fmt.Errorf("-flood-baseline: %w", err)
		}
	}
	return nil
}
