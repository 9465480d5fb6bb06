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

// The HTTP server's bounds (ADR-0034, ADR-0063).
const (
	// peekBytes is how much of a new connection headersWaiting looks at.
	peekBytes = 4 << 10
	// connReserve is the room beyond http.max_connections that the probes always find.
	connReserve = 16
	// headerTimeout bounds what a slowloris client holds a connection for.
	headerTimeout = 5 * time.Second
	// readTimeout bounds reading a whole request, body included.
	readTimeout = 30 * time.Second
	// bodyGrace and bodyMinRate bound a body's arrival, or the connection is closed.
	bodyGrace   = 2 * time.Second
	bodyMinRate = 64 << 10 // bytes a second
	// writeTimeout bounds a request's handling and response.
	writeTimeout = 60 * time.Second
	// idleTimeout outlasts Prometheus' 15 s scrape interval, so a scraper keeps its connection.
	idleTimeout = 30 * time.Second
	// maxHeaderBytes: net/http's 1 MiB default would make memory the limit.
	maxHeaderBytes = 64 << 10
)

// newHTTPServer is the daemon's HTTP server over h and its connection
// limiter; shed counts what is shed.
func newHTTPServer(h http.Handler, maxConns int, shed func(reason string)) (*http.Server, *connLimiter) {
	lim := newConnLimiter(maxConns, shed)
	return lim.server(h), lim
}

func newConnLimiter(maxConns int, shed func(reason string)) *connLimiter {
	if shed == nil {
		shed = func(string) {}
	}
	return &connLimiter{max: maxConns, open: maxConns + connReserve, bodyGrace: bodyGrace, shed: shed, conns: map[net.Conn]*list.Element{}}
}

// server is an HTTP server over h bounded by l, which both listeners share.
func (l *connLimiter) server(h http.Handler) *http.Server {
	return &http.Server{
		// HTTP/1.1 only (an empty map keeps h2 off): one request per connection
		// is what the limiter counts and evicts (ADR-0063).
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

// serveTCP serves srv on ln, through exporter-toolkit's web.Serve when a
// web config file is given.
func serveTCP(srv *http.Server, ln net.Listener, webConfig string, log *zap.Logger) error {
	if webConfig == "" {
		return srv.Serve(ln)
	}
	return web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &webConfig}, slog.New(zapslog.NewHandler(log.Named("web").Core())))
}

// rawConn is the connection under TLS's: the one the limiter counts.
func rawConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// connLimiter bounds the HTTP server's connections so the probes always
// answer (ADR-0034, ADR-0063): at most open connections (a new one evicts
// the longest-waiting) and max general requests (more get 503).
type connLimiter struct {
	max, open int
	bodyGrace time.Duration // bodyGrace; longer in tests
	shed      func(reason string)

	mu sync.Mutex
	// conns holds every open connection: its element in a list, nil while served.
	conns map[net.Conn]*list.Element
	// waiting (headers), starting (not yet handled), reading (body) hold the evictable, oldest first.
	waiting, starting, reading list.List
	// busy counts the general requests being served.
	busy atomic.Int64
}

// listener wraps ln so that every connection it accepts is bounded.
func (l *connLimiter) listener(ln net.Listener) net.Listener { return limitedListener{ln, l} }

type limitedListener struct {
	net.Listener
	l *connLimiter
}

// Accept returns the next connection admitted, closing those refused: a
// loop blocked on the cap would keep the probes in the kernel's backlog.
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

// admit counts c in, evicting the longest-waiting connection when full;
// false (c closed) when none is evictable.
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

// evictLocked forgets and returns the longest-waiting connection of lists
// (nil: none); l.mu is held.
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

type waiter struct {
	c     net.Conn
	since time.Time
}

// close ends an evicted connection; its server goroutine's read fails.
func (l *connLimiter) close(victim net.Conn) {
	victim.Close() //nolint:errcheck // evicted; nothing to tell it
	l.shed(metrics.ShedEvicted)
}

// evictReader closes the longest-arriving body's connection; false if none.
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

// track follows the server's connection states.
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
		// Evictable until the handler takes it: basic auth may answer first.
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

// unlist takes e out of whichever list holds it; l.mu is held.
func (l *connLimiter) unlist(e *list.Element) {
	l.waiting.Remove(e)
	l.starting.Remove(e)
	l.reading.Remove(e)
}

// counts are the open connections, waiting and active.
func (l *connLimiter) counts() (waiting, active int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.waiting.Len() + l.starting.Len() + l.reading.Len()
	return w, len(l.conns) - w
}

// isProbe reports whether r is one of the requests the reserve is for.
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

// handler serves the probes always and at most max other requests at once.
func (l *connLimiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if c != nil {
			l.setReading(c, false) // taken: not evicted for another
		}
		if isProbe(r) {
			if r.ContentLength != 0 {
				// A probe's body is not read at the client's pace: answer and close.
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
			api.CloseUnread(w)
		case c != nil:
			g := l.gateBody(w, r, c)
			defer g.done()
		}
		h.ServeHTTP(w, r)
	})
}

type connKey struct{}

// gateBody bounds r's body by a read deadline and keeps c evictable until
// its end is read; the deadline is then lifted, else the server's
// background read would cancel the handling.
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

// gatedBody calls ended when its end is read, and done on an error.
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
