package page

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/api"
	"watchdog/internal/testenv"
)

// streamEnv is env with its page's stream shortened (gap and write wait)
// and reachable for its counts.
func streamEnv(t *testing.T) (*env, *Handler) {
	t.Helper()
	e := newEnv(t, "")
	pg := New(Options{View: e.view, Store: e.st, Now: e.clock.Now, StreamGap: time.Millisecond, StreamWriteWait: 200 * time.Millisecond})
	srv := httptest.NewUnstartedServer(api.New(api.Options{Store: e.st, Writer: e.w, Now: e.clock.Now, View: e.view, Page: pg}))
	srv.Config.ConnContext = ConnContext // as the daemon's server: a stream fixes its send buffer
	srv.Start()
	t.Cleanup(srv.Close)
	e.srv = srv
	return e, pg
}

// events opens GET /events and returns its lines.
func (e *env) events(ctx context.Context) (*http.Response, *bufio.Reader) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/events", nil)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, bufio.NewReader(resp.Body)
}

// until reads lines until one contains want.
func until(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	var seen []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended (%v) before %q; read %q", err, want, seen)
		}
		if strings.Contains(line, want) {
			return
		}
		seen = append(seen, line)
	}
}

// TestStreamTellsWhatChanged: a stream opens with its retry and a
// comment, says which entity changed after a write (the view synced by a
// reader, as the daemon's loop does), is counted while open, and ends at
// CloseStreams, after which a new one is refused.
func TestStreamTellsWhatChanged(t *testing.T) {
	e, pg := streamEnv(t)
	e.register("session", "s-1", "", "running")
	if err := e.view.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, r := e.events(context.Background())
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	until(t, r, "retry: 3000")
	until(t, r, ": open")
	if got := pg.Streams().Open; got != 1 {
		t.Fatalf("open streams = %d, want 1", got)
	}
	e.register("session", "s-2", "", "running")
	if err := e.view.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	until(t, r, "event: change")
	until(t, r, `data: {"entities":["session/s-2"]}`)

	pg.CloseStreams()
	if _, err := r.ReadString('\n'); err == nil {
		// An empty line may still be buffered; the next read ends.
		if _, err := r.ReadString('\n'); err == nil {
			t.Fatal("the stream did not end at CloseStreams")
		}
	}
	testenv.Eventually(t, "streams closed", 2*time.Minute, func() (bool, string) { n := pg.Streams().Open; return n == 0, fmt.Sprint(n) })
	if status, _ := e.get("/events"); status != http.StatusServiceUnavailable {
		t.Fatalf("a stream after CloseStreams: %d, want 503", status)
	}
}

// TestStreamCap: past SetStreamCap a stream is refused 503 and counted;
// a client going away frees its place.
func TestStreamCap(t *testing.T) {
	e, pg := streamEnv(t)
	pg.SetStreamCap(1)
	ctx, cancel := context.WithCancel(context.Background())
	resp, r := e.events(ctx)
	until(t, r, ": open")
	if status, _ := e.get("/events"); status != http.StatusServiceUnavailable {
		t.Fatalf("a second stream: %d, want 503", status)
	}
	if got := pg.Streams().Refused; got != 1 {
		t.Fatalf("refused = %d, want 1", got)
	}
	cancel()
	resp.Body.Close()
	testenv.Eventually(t, "the first stream's end", 2*time.Minute, func() (bool, string) { n := pg.Streams().Open; return n == 0, fmt.Sprint(n) })
	resp, r = e.events(context.Background())
	defer resp.Body.Close()
	until(t, r, ": open")
	if got := pg.Streams().Dropped; got != 0 {
		t.Fatalf("dropped = %d: a client that left is no drop", got)
	}
}

// TestStreamDropsAClientThatDoesNotRead: a client that sends its request
// and never reads (its receive buffer small) is dropped once the socket's
// buffers are full and a write waits past the write wait, and counted;
// the daemon's memory for it was one subscription all along.
func TestStreamDropsAClientThatDoesNotRead(t *testing.T) {
	e, pg := streamEnv(t)
	for i := range 200 {
		e.register("session", fmt.Sprintf("s-%03d", i), "", "running")
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET /events HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(e.srv.URL, "http://")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the stream open", 2*time.Minute, func() (bool, string) { n := pg.Streams().Open; return n == 1, fmt.Sprint(n) })
	// Every change names a hundred entities: each event is about 2 KB.
	db := testenv.SQL(t, e.st.Path())
	i := 0
	testenv.Eventually(t, "the reader dropped", 2*time.Minute, func() (bool, string) {
		i++
		if _, err := db.Exec(`UPDATE entities SET updated_at = updated_at + 1`); err != nil {
			t.Fatal(err)
		}
		if err := e.view.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := pg.Streams()
		return s.Dropped == 1 && s.Open == 0, fmt.Sprintf("%+v after %d changes", s, i)
	})
	t.Logf("dropped after %d changes of 200 entities", i)
}
