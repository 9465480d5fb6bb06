package daemon

import (
	"container/list"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"watchdog/api"
	"watchdog/metrics"
	"watchdog/page"
	"watchdog/wire"
)

// The HTTP server's bounds (ADR-0034). The cap is http.max_connections;
// these are fixed, each short enough that a flood of slow or idle clients
// holds little for long, and long enough for any real client of a local
// daemon.
const (
	// peekBytes is how much of a new connection headersWaiting looks at.
	peekBytes = 4 << 10
	// connReserve is how many connections the server keeps open beyond
	// http.max_connections: the room the probes (/healthz, /readyz,
	// /metrics) always find, as the general requests may not take it.
	connReserve = 16
	// headerTimeout bounds the wait for a request's headers: what a
	// slowloris client holds a connection for. A local client sends its
	// headers in microseconds.
	headerTimeout = 5 * time.Second
	// readTimeout bounds reading a whole request, body included (1 MiB at
	// most).
	readTimeout = 30 * time.Second
	// bodyGrace and bodyMinRate bound a request body's arrival: it must
	// be whole within bodyGrace plus its length at bodyMinRate (18 s for
	// the 1 MiB most), or the connection is closed. A local or LAN client
	// sends a body of a few KB in one segment.
	bodyGrace   = 2 * time.Second
	bodyMinRate = 64 << 10 // bytes a second
	// writeTimeout bounds a request's handling and response.
	writeTimeout = 60 * time.Second
	// idleTimeout ends a keep-alive connection no request came on: longer
	// than Prometheus' default 15s scrape interval, so a scraper keeps its
	// connection, and short enough that idle clients do not pile up.
	idleTimeout = 30 * time.Second
	// maxHeaderBytes bounds a request's headers (the API's are a few
	// hundred bytes): net/http's default of 1 MiB per slow connection
	// would make memory, not descriptors, the limit.
	maxHeaderBytes = 64 << 10
)

// newHTTPServer is the daemon's HTTP server over h: its timeouts, and a
// connection limiter holding at most maxConns general requests at once
// and maxConns+connReserve connections open, which the server serves
// through (limiter.listener). shed counts what the bounds shed (nil:
// nothing counted).
func newHTTPServer(h http.Handler, maxConns int, shed func(reason string)) (*http.Server, *connLimiter) {
	lim := newConnLimiter(maxConns, shed)
	return lim.server(h), lim
}

// newConnLimiter is a limiter of maxConns requests (connLimiter).
func newConnLimiter(maxConns int, shed func(reason string)) *connLimiter {
	if shed == nil {
		shed = func(string) {}
	}
	return &connLimiter{max: maxConns, open: maxConns + connReserve, bodyGrace: bodyGrace, shed: shed, conns: map[net.Conn]*list.Element{}}
}

// server is an HTTP server over h with the daemon's timeouts, bounded by
// l: the TCP port's and the local socket's share one limiter.
func (l *connLimiter) server(h http.Handler) *http.Server {
	return &http.Server{
		// HTTP/1.1 only, TLS included (a non-nil empty map keeps net/http
		// and exporter-toolkit from offering h2): one request at a time
		// per connection is what the limiter counts, reads the body of
		// and evicts (ADR-0063).
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		Handler:      l.handler(h),
		ConnState:    func(c net.Conn, s http.ConnState) { l.track(rawConn(c), s) },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			c = rawConn(c)
			return api.PeerContext(page.ConnContext(context.WithValue(ctx, connKey{}, c), c), c)
		},
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// serveTCP serves srv on ln: through exporter-toolkit's web.Serve when a
// web config file is given (TLS, basic auth; the toolkit re-reads the
// file for each connection and request), else plain HTTP.
func serveTCP(srv *http.Server, ln net.Listener, webConfig string, log *zap.Logger) error {
	if webConfig == "" {
		return srv.Serve(ln)
	}
	return web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &webConfig}, slog.New(zapslog.NewHandler(log.Named("web").Core())))
}

// rawConn is the connection the listener accepted, under TLS's: the one
// the limiter counts, and whose socket the page sizes.
func rawConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// connLimiter bounds the HTTP server's connections so that the probes
// answer whatever else comes (ADR-0034):
//
//   - at most open connections (max + connReserve, each a file
//     descriptor). A new connection beyond it closes the oldest one still
//     waiting for its request's headers (a slow client's, or an idle
//     keep-alive one) to make room, and is closed itself only when every
//     open connection has a request being served;
//   - at most max requests other than the probes are served at once;
//     more are answered 503 at once. So at least connReserve connections
//     are always waiting (evictable) or probes, and a probe on a new
//     connection always gets in;
//   - a request whose body is still arriving is evictable too, and so
//     is one whose headers are read but which the handler has not taken
//     yet (exporter-toolkit's basic auth answers some before it); the
//     accept path evicts whichever has waited longest, and a request over
//     the cap evicts the longest-arriving body before it is answered 503:
//     a slow body holds a place only until someone needs it, and at most
//     bodyGrace plus its length at bodyMinRate in any case. A probe or a
//     GET with a body is answered and closed without reading it.
//
// A connection cannot be judged by its request before the headers
// arrive, which is why waiting connections are the ones given up: the
// newest connection, a client that sends its headers at once, is the last
// to be evicted, and one whose whole headers are already in its socket
// buffer when it is accepted (headersWaiting: under a flood, a real
// client's, queued in the kernel's backlog behind the flood) is never
// evicted. Its request is then served or, over max, answered 503.
type connLimiter struct {
	max, open int
	bodyGrace time.Duration // bodyGrace; longer in tests
	shed      func(reason string)

	mu sync.Mutex
	// conns holds every open connection: its element in waiting while it
	// waits for a request's headers, nil while a request is served.
	conns map[net.Conn]*list.Element
	// waiting orders the waiting connections (waiter), the longest
	// waiting first; starting those whose request's headers are read but
	// which the limiter's handler has not taken yet (no place of the cap
	// held); reading those whose request's body is still arriving (a
	// place held). A connection's element is in one of them, or none.
	waiting, starting, reading list.List
	// busy counts the general requests being served.
	busy atomic.Int64
}

// listener wraps ln so that every connection it accepts is counted and
// bounded.
func (l *connLimiter) listener(ln net.Listener) net.Listener { return limitedListener{ln, l} }

type limitedListener struct {
	net.Listener
	l *connLimiter
}

// Accept returns the next connection admitted; one refused is closed and
// the next one accepted, so the server's accept loop never blocks on the
// cap (a blocked loop would keep the probes in the kernel's backlog).
func (ll limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ll.l.admit(c) {
			return c, nil
		}
	}
}

// admit counts c in, evicting the longest-waiting connection when all
// are open; false (c closed) when none is waiting. c itself waits
// (evictable) unless its whole request headers are already there to read.
func (l *connLimiter) admit(c net.Conn) bool {
	ready := headersWaiting(c)
	l.mu.Lock()
	var victim net.Conn
	if len(l.conns) >= l.open {
		victim = l.evictLocked(&l.waiting, &l.starting, &l.reading)
		if victim == nil {
			l.mu.Unlock()
			c.Close() //nolint:errcheck // refused; nothing to tell it
			l.shed(metrics.ShedRefused)
			return false
		}
	}
	if ready {
		l.conns[c] = nil // not a slow client: never evicted
	} else {
		l.conns[c] = l.waiting.PushBack(waiter{c, time.Now()})
	}
	l.mu.Unlock()
	if victim != nil {
		l.close(victim)
	}
	return true
}

// evictLocked forgets the connection that has waited longest among the
// fronts of lists, and returns it (nil: none); l.mu is held. A fresh
// connection, a real client's under a flood, is thus the last given up,
// whether the flood waits in its headers or in its bodies.
func (l *connLimiter) evictLocked(lists ...*list.List) net.Conn {
	var from *list.List
	for _, ls := range lists {
		if f := ls.Front(); f != nil && (from == nil || f.Value.(waiter).since.Before(from.Front().Value.(waiter).since)) {
			from = ls
		}
	}
	if from == nil {
		return nil
	}
	victim := from.Remove(from.Front()).(waiter).c
	delete(l.conns, victim)
	return victim
}

// waiter is a connection in waiting or reading, and since when.
type waiter struct {
	c     net.Conn
	since time.Time
}

// close ends an evicted connection: the server's goroutine for it sees
// its read fail and ends it; its StateClosed then finds it already
// forgotten.
func (l *connLimiter) close(victim net.Conn) {
	victim.Close() //nolint:errcheck // evicted; nothing to tell it
	l.shed(metrics.ShedEvicted)
}

// evictReader closes the connection whose request body has been arriving
// longest, making room for a request over the cap; false when none is.
func (l *connLimiter) evictReader() bool {
	l.mu.Lock()
	victim := l.evictLocked(&l.reading)
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	l.close(victim)
	return true
}

// setReading moves c into the reading list (on) or out of it.
func (l *connLimiter) setReading(c net.Conn, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.conns[c]
	if !ok {
		return // evicted meanwhile
	}
	if e != nil {
		l.unlist(e)
		l.conns[c] = nil
	}
	if on {
		l.conns[c] = l.reading.PushBack(waiter{c, time.Now()})
	}
}

// track follows the server's connection states: a connection waits
// (new, or idle between keep-alive requests) until a request's headers
// are read (active), and is forgotten once closed.
func (l *connLimiter) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.conns[c]
	if !ok {
		return // evicted, or not accepted through the listener
	}
	switch s {
	case http.StateIdle:
		if e != nil {
			l.unlist(e)
		}
		l.conns[c] = l.waiting.PushBack(waiter{c, time.Now()})
	case http.StateActive:
		// Its headers are read; until the limiter's handler takes it, it
		// stays evictable (starting, from now): what answers it before
		// that (exporter-toolkit's basic auth) may leave its body to be
		// read as slowly as the client sends it.
		if e != nil {
			l.unlist(e)
		}
		l.conns[c] = l.starting.PushBack(waiter{c, time.Now()})
	case http.StateClosed, http.StateHijacked:
		if e != nil {
			l.unlist(e)
		}
		delete(l.conns, c)
	}
}

// unlist takes e out of whichever list holds it (list.Remove of another
// list's element does nothing); l.mu is held.
func (l *connLimiter) unlist(e *list.Element) {
	l.waiting.Remove(e)
	l.starting.Remove(e)
	l.reading.Remove(e)
}

// counts are the open connections, waiting (for headers or a body) and
// active (watchdog_http_connections).
func (l *connLimiter) counts() (waiting, active int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.waiting.Len() + l.starting.Len() + l.reading.Len()
	return w, len(l.conns) - w
}

// isProbe reports whether r is one of the requests the reserve is for:
// what a supervisor or a scraper asks of a busy daemon.
func isProbe(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// handler serves the probes always and at most max other requests at
// once; one more first evicts the longest-arriving body (evictReader),
// and failing that is answered 503 with Retry-After, its connection
// closed so that it frees its place. A request's body must arrive at
// bodyMinRate (gateBody), its connection evictable until it has.
func (l *connLimiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if c != nil {
			l.setReading(c, false) // taken: not evicted for another
		}
		if isProbe(r) {
			if r.ContentLength != 0 {
				// A probe has no body to read: answered, and closed, not
				// drained at the client's pace.
				api.CloseUnread(w)
			}
			h.ServeHTTP(w, r)
			return
		}
		defer l.busy.Add(-1)
		if l.busy.Add(1) > int64(l.max) && !l.evictReader() {
			l.shed(metrics.ShedBusy)
			api.CloseUnread(w)
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(api.Error{ // the client went away: nothing left to tell it
				Error: fmt.Sprintf("the daemon is serving its connection cap (%d requests: http.max_connections, lowered to fit the fd limit when that is small) already; retry shortly", l.max),
				Cause: "unavailable",
			})
			return
		}
		switch {
		case r.ContentLength == 0:
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			// No GET reads a body: answered, and closed, not drained.
			api.CloseUnread(w)
		case c != nil:
			g := l.gateBody(w, r, c)
			defer g.done()
		}
		h.ServeHTTP(w, r)
	})
}

// connKey carries a request's connection in its context (ConnContext).
type connKey struct{}

// gateBody bounds r's body: a read deadline of bodyGrace plus its length
// at bodyMinRate (chunked: the largest body's), and c evictable until the
// body's end is read. The deadline is lifted at the end, so that it
// cannot end the request's handling (the server's background read would
// cancel its context), and kept otherwise: net/http reads what a handler
// left of a body before it answers, and the deadline bounds that too.
func (l *connLimiter) gateBody(w http.ResponseWriter, r *http.Request, c net.Conn) *gatedBody {
	n := r.ContentLength
	if n < 0 || n > wire.MaxBody {
		n = wire.MaxBody
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(l.bodyGrace + time.Duration(n)*time.Second/bodyMinRate)) // only a hijacked or foreign writer refuses; then unbounded but by readTimeout
	l.setReading(c, true)
	g := &gatedBody{ReadCloser: r.Body}
	g.done = sync.OnceFunc(func() { l.setReading(c, false) })
	g.ended = sync.OnceFunc(func() {
		g.done()
		_ = rc.SetReadDeadline(time.Time{}) // as above
	})
	r.Body = g
	return g
}

// gatedBody is a request body that calls ended when its end is read,
// and done on an error.
type gatedBody struct {
	io.ReadCloser
	done, ended func()
}

func (g *gatedBody) Read(p []byte) (int, error) {
	n, err := g.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		g.ended()
	case err != nil:
		g.done()
	}
	return n, err
}
