package daemon

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"watchdog/api"
	"watchdog/metrics"
	"watchdog/page"
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
	if shed == nil {
		shed = func(string) {}
	}
	lim := &connLimiter{max: maxConns, open: maxConns + connReserve, shed: shed, conns: map[net.Conn]*list.Element{}}
	srv := &http.Server{
		Handler:   lim.handler(h),
		ConnState: lim.track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return api.PeerContext(page.ConnContext(ctx, c), c)
		},
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	return srv, lim
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
//     connection always gets in.
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
	shed      func(reason string)

	mu sync.Mutex
	// conns holds every open connection: its element in waiting while it
	// waits for a request's headers, nil while a request is served.
	conns map[net.Conn]*list.Element
	// waiting orders the waiting connections, the longest waiting first.
	waiting list.List
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
		oldest := l.waiting.Front()
		if oldest == nil {
			l.mu.Unlock()
			c.Close() //nolint:errcheck // refused; nothing to tell it
			l.shed(metrics.ShedRefused)
			return false
		}
		victim = oldest.Value.(net.Conn)
		l.waiting.Remove(oldest)
		delete(l.conns, victim)
	}
	if ready {
		l.conns[c] = nil // not a slow client: never evicted
	} else {
		l.conns[c] = l.waiting.PushBack(c)
	}
	l.mu.Unlock()
	if victim != nil {
		// The server's goroutine for it sees the read fail and ends it;
		// its StateClosed then finds it already forgotten.
		victim.Close() //nolint:errcheck // evicted; nothing to tell it
		l.shed(metrics.ShedEvicted)
	}
	return true
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
		if e == nil {
			l.conns[c] = l.waiting.PushBack(c)
		}
	case http.StateActive:
		if e != nil {
			l.waiting.Remove(e)
			l.conns[c] = nil
		}
	case http.StateClosed, http.StateHijacked:
		if e != nil {
			l.waiting.Remove(e)
		}
		delete(l.conns, c)
	}
}

// counts are the open connections, waiting and active
// (watchdog_http_connections).
func (l *connLimiter) counts() (waiting, active int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting.Len(), len(l.conns) - l.waiting.Len()
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
// once; one more is answered 503 with Retry-After, and its connection
// closed so that it frees its place.
func (l *connLimiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isProbe(r) {
			h.ServeHTTP(w, r)
			return
		}
		defer l.busy.Add(-1)
		if l.busy.Add(1) > int64(l.max) {
			l.shed(metrics.ShedBusy)
			w.Header().Set("Connection", "close")
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
		h.ServeHTTP(w, r)
	})
}
