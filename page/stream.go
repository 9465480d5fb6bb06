package page

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// The stream's bounds (GET /events, ADR-0051).
const (
	// StreamKeepAlive is how often an idle stream sends a comment, inside idle timeouts.
	StreamKeepAlive = 15 * time.Second
	// StreamGap is the least time between two change events: a burst is one event.
	StreamGap = 250 * time.Millisecond
	// StreamWriteWait is how long one write may take before a client is dropped.
	StreamWriteWait = 10 * time.Second
	// StreamSendBuffer is a fixed small SO_SNDBUF: a stalled client meets StreamWriteWait soon.
	StreamSendBuffer = 16 << 10
	// StreamRetry is the reconnection delay the stream tells the browser.
	StreamRetry = 3 * time.Second
)

// streams counts the open, dropped and refused streams and ends them at shutdown.
type streams struct {
	open    atomic.Int64
	dropped atomic.Uint64
	refused atomic.Uint64
	max     atomic.Int64 // 0: no cap

	once sync.Once
	done chan struct{}
}

// StreamStats is what the metrics read of the page's streams.
type StreamStats struct {
	// Open is how many streams are open now.
	Open int
	// Dropped counts streams ended because the client did not read in time.
	Dropped uint64
	// Refused counts the streams refused at the cap (SetStreamCap).
	Refused uint64
}

// Streams reads the page's stream counts.
func (h *Handler) Streams() StreamStats {
	return StreamStats{Open: int(h.streams.open.Load()), Dropped: h.streams.dropped.Load(), Refused: h.streams.refused.Load()}
}

// SetStreamCap bounds the open streams (each holds a connection); n ≤ 0: no cap.
func (h *Handler) SetStreamCap(n int) { h.streams.max.Store(int64(max(n, 0))) }

// CloseStreams ends every stream and refuses new ones, so shutdown need not wait.
func (h *Handler) CloseStreams() { h.streams.once.Do(func() { close(h.streams.done) }) }

// connKey is the request context's key of its connection (ConnContext).
type connKey struct{}

// ConnContext is the http.Server's ConnContext, so a stream can fix its send buffer.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// change is one event's data: what changed since the last event.
type change struct {
	Entities   []string `json:"entities,omitempty"`
	More       bool     `json:"more,omitempty"`
	Dismissals bool     `json:"dismissals,omitempty"`
}

// events is GET /events, a server-sent-events stream of the view's changes
// (ADR-0051); a client holds one bounded, coalescing subscription.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	select {
	case <-h.streams.done:
		http.Error(w, "the daemon is stopping", http.StatusServiceUnavailable)
		return
	default:
	}
	n := h.streams.open.Add(1)
	defer h.streams.open.Add(-1)
	if m := h.streams.max.Load(); m > 0 && n > m {
		h.streams.refused.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int(StreamRetry/time.Second)))
		http.Error(w, "too many open page streams ("+strconv.FormatInt(m, 10)+"); retry shortly", http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	// Per-write deadlines instead of the server's timeouts, which would end the stream.
	_ = rc.SetReadDeadline(time.Time{}) // a writer without deadlines (a test's recorder) has nothing to lift
	if c, ok := r.Context().Value(connKey{}).(interface{ SetWriteBuffer(int) error }); ok {
		_ = c.SetWriteBuffer(StreamSendBuffer) // best effort: the write deadline still bounds a stalled client
	}
	sub := h.o.View.Subscribe()
	defer sub.Close()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	send := func(msg string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(h.writeWait))
		if _, err := w.Write([]byte(msg)); err != nil {
			return h.drop(r, err)
		}
		if err := rc.Flush(); err != nil {
			return h.drop(r, err)
		}
		return true
	}
	if !send("retry: " + strconv.Itoa(int(StreamRetry/time.Millisecond)) + "\n: open\n\n") {
		return
	}
	keep := time.NewTicker(StreamKeepAlive)
	defer keep.Stop()
	var last time.Time
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.streams.done:
			return
		case <-keep.C:
			if !send(": keep-alive\n\n") {
				return
			}
		case <-sub.C():
			if wait := h.gap - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-r.Context().Done():
					t.Stop()
					return
				case <-h.streams.done:
					t.Stop()
					return
				case <-t.C:
				}
			}
			c := sub.Take()
			if c.Empty() {
				continue
			}
			b, _ := json.Marshal(change(c)) // strings and booleans: cannot fail
			last = time.Now()
			if !send("event: change\ndata: " + string(b) + "\n\n") {
				return
			}
			keep.Reset(StreamKeepAlive)
		}
	}
}

// drop ends a stream whose write failed; only a timeout counts as dropped.
func (h *Handler) drop(r *http.Request, err error) bool {
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		h.streams.dropped.Add(1)
		h.o.Log.Info("page stream dropped: the client did not read", zap.String("remote", r.RemoteAddr), zap.Error(err))
	}
	return false
}
