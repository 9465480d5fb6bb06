package daemon

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/metrics"
)

// connDeadline bounds every wait of these tests for the server to get to
// a state; a slow machine makes them slower, never red.
const connDeadline = 2 * time.Minute

// limitedServer is newHTTPServer on 127.0.0.1 over a handler that
// answers every path 200, holding a request with the header X-Hold until
// release is closed.
type limitedServer struct {
	t       *testing.T
	lim     *connLimiter
	addr    string
	release chan struct{}
	held    sync.WaitGroup

	mu   sync.Mutex
	shed map[string]int
}

func startLimited(t *testing.T, maxConns int, opts ...func(*connLimiter)) *limitedServer {
	t.Helper()
	s := &limitedServer{t: t, release: make(chan struct{}), shed: map[string]int{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			s.held.Done()
			<-s.release
		}
		if r.Method == http.MethodPost {
			if _, err := io.ReadAll(r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	srv, lim := newHTTPServer(h, maxConns, func(reason string) {
		s.mu.Lock()
		s.shed[reason]++
		s.mu.Unlock()
	})
	s.lim = lim
	for _, o := range opts {
		o(lim)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go srv.Serve(lim.listener(ln)) //nolint:errcheck // ends with Close
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		srv.Close() //nolint:errcheck // the test is over
	})
	return s
}

func (s *limitedServer) shedCount(reason string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shed[reason]
}

// get makes one request on a new connection and returns its status.
func (s *limitedServer) get(path string, hold bool) (int, error) {
	req, err := http.NewRequest("GET", "http://"+s.addr+path, nil)
	if err != nil {
		return 0, err
	}
	if hold {
		req.Header.Set("X-Hold", "1")
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: connDeadline}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// mustGet wants status from path.
func (s *limitedServer) mustGet(path string, want int) {
	s.t.Helper()
	got, err := s.get(path, false)
	if err != nil || got != want {
		s.t.Errorf("GET %s: %d %v, want %d", path, got, err, want)
	}
}

// hold starts n requests to path that stay in the handler until release.
func (s *limitedServer) hold(path string, n int) {
	s.held.Add(n)
	for range n {
		go s.get(path, true) //nolint:errcheck // released at the end
	}
	s.held.Wait()
}

// slowloris opens n connections that send part of a request line and
// never the rest.
func slowloris(t *testing.T, addr string, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", n, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte("GET /api/v1/entities HTTP/1.1\r\nHost: 127")); err != nil {
			t.Fatal(err)
		}
	}
}

// slowBodies opens n connections that send a POST's whole headers, then
// one byte of a 200,000-byte body, and nothing more.
func slowBodies(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", n, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte("POST /api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n{")); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	return cs
}

// post makes one POST with a whole body on a new connection.
func (s *limitedServer) post(path string) (int, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: connDeadline}
	resp, err := c.Post("http://"+s.addr+path, "application/json", strings.NewReader(`{"id":"x"}`))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func TestConnLimiter(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"slow headers are evicted, probes and writes answer", func(t *testing.T) {
			s := startLimited(t, 4) // 20 connections open at most
			slowloris(t, s.addr, 100)
			testenv.Eventually(t, "80 slow connections evicted", connDeadline, func() (bool, string) {
				n := s.shedCount(metrics.ShedEvicted)
				return n >= 80, fmt.Sprintf("%d evicted", n)
			})
			if w, a := s.lim.counts(); w+a > 20 {
				t.Errorf("%d waiting + %d active connections open, want at most 20", w, a)
			}
			s.mustGet("/readyz", 200)
			s.mustGet("/metrics", 200)
			s.mustGet("/api/v1/entities", 200)
			if n := s.shedCount(metrics.ShedRefused); n != 0 {
				t.Errorf("%d connections refused, want none: a waiting one was there to evict", n)
			}
		}},
		{"slow bodies are evicted for probes and for requests over the cap", func(t *testing.T) {
			// 20 connections open, 4 requests served at most; the bodies'
			// deadline far enough that only evictions close them.
			s := startLimited(t, 4, func(l *connLimiter) { l.bodyGrace = time.Hour })
			slowBodies(t, s.addr, 40)
			// Each one over the cap evicts the longest arriving; one that
			// finds none yet in the reading list (all in service between
			// the cap's count and their first read, as in a burst) is
			// answered 503, or refused at accept when every open
			// connection is in that state (a loaded machine). Every one ends
			// one way or another, and at most the cap's four are left holding a place.
			testenv.Eventually(t, "the slow bodies over the cap evicted or shed", connDeadline, func() (bool, string) {
				w, a := s.lim.counts()
				n, busy, refused := s.shedCount(metrics.ShedEvicted), s.shedCount(metrics.ShedBusy), s.shedCount(metrics.ShedRefused)
				return n+busy+refused+w+a == 40 && w+a <= 4, fmt.Sprintf("%d evicted, %d shed busy, %d refused, %d waiting + %d active", n, busy, refused, w, a)
			})
			shedBefore := s.shedCount(metrics.ShedBusy) + s.shedCount(metrics.ShedRefused)
			s.mustGet("/readyz", 200)
			s.mustGet("/healthz", 200)
			for i := range 10 {
				if code, err := s.post("/api/v1/entities"); err != nil || code != 200 {
					t.Errorf("POST %d among slow bodies: %d %v, want 200", i, code, err)
				}
			}
			if n := s.shedCount(metrics.ShedBusy) + s.shedCount(metrics.ShedRefused) - shedBefore; n != 0 {
				t.Errorf("%d requests shed busy or refused, want none: a slow body was there to evict", n)
			}
		}},
		{"a probe or a GET with a body is answered and closed, its body never waited for", func(t *testing.T) {
			s := startLimited(t, 4, func(l *connLimiter) { l.bodyGrace = time.Hour })
			for _, path := range []string{"/healthz", "/api/v1/entities"} {
				c, err := net.Dial("tcp", s.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n{")); err != nil {
					t.Fatal(err)
				}
				_ = c.SetReadDeadline(time.Now().Add(connDeadline)) // the test's bound only
				got, err := io.ReadAll(c)
				if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 200") || !strings.Contains(string(got), "Connection: close") {
					t.Errorf("GET %s with a slow body: %q %v, want 200 and the connection closed", path, got, err)
				}
			}
		}},
		{"a body that stops arriving ends its connection", func(t *testing.T) {
			s := startLimited(t, 4)
			c := slowBodies(t, s.addr, 1)[0]
			// The deadline is bodyGrace plus 200,000 bytes at bodyMinRate:
			// about 5 s; the read returns once the server closes.
			_ = c.SetReadDeadline(time.Now().Add(connDeadline))
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("read: %v (the server kept the connection)", err)
			}
			if !strings.HasPrefix(string(got), "HTTP/1.1 400") {
				t.Errorf("answer %q, want a 400 before the close", got)
			}
		}},
		{"requests over the cap get 503, probes still answer", func(t *testing.T) {
			s := startLimited(t, 2)
			s.hold("/api/v1/entities", 2)
			s.mustGet("/api/v1/entities", 503)
			s.mustGet("/", 503)
			s.mustGet("/readyz", 200)
			s.mustGet("/healthz", 200)
			if n := s.shedCount(metrics.ShedBusy); n != 2 {
				t.Errorf("%d requests shed busy, want 2", n)
			}
			close(s.release)
			testenv.Eventually(t, "the held requests end", connDeadline, func() (bool, string) {
				return s.lim.busy.Load() == 0, fmt.Sprintf("%d busy", s.lim.busy.Load())
			})
			s.mustGet("/api/v1/entities", 200)
		}},
		{"every connection active: a new one is refused", func(t *testing.T) {
			s := startLimited(t, 1) // 17 open at most
			s.hold("/api/v1/entities", 1)
			s.hold("/readyz", connReserve)
			if _, err := s.get("/readyz", false); err == nil {
				t.Error("GET /readyz answered with every connection serving a request; want it refused")
			}
			// The client may see its connection closed before the server
			// has counted the refusal: wait for the count, then hold it
			// to exactly one.
			testenv.Eventually(t, "the refusal counted", connDeadline, func() (bool, string) {
				n := s.shedCount(metrics.ShedRefused)
				return n >= 1, fmt.Sprintf("%d refused", n)
			})
			if n := s.shedCount(metrics.ShedRefused); n != 1 {
				t.Errorf("%d connections refused, want 1", n)
			}
			close(s.release)
			testenv.Eventually(t, "a probe answers once the held ones end", connDeadline, func() (bool, string) {
				code, err := s.get("/readyz", false)
				return code == 200, fmt.Sprint(code, err)
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// TestHeadersWaiting: only a connection whose whole request headers are
// in its socket counts as not slow. A false answer is also what an empty
// socket gives, so the negative cases cannot pass by luck the other way.
func TestHeadersWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		name, sent string
		want       bool
	}{
		{"whole headers", "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", true},
		{"whole headers and a body", "POST /api/v1/entities HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", true},
		{"headers still coming", "POST /api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", false},
		{"nothing sent", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			if _, err := client.Write([]byte(tt.sent)); err != nil {
				t.Fatal(err)
			}
			if tt.want {
				testenv.Eventually(t, "the headers seen", connDeadline, func() (bool, string) {
					return headersWaiting(server), "not yet"
				})
			} else if headersWaiting(server) {
				t.Errorf("headersWaiting after %q = true", tt.sent)
			}
			// Peeking consumed nothing: the server still reads it all.
			if tt.sent != "" {
				buf := make([]byte, len(tt.sent))
				if _, err := io.ReadFull(server, buf); err != nil || string(buf) != tt.sent {
					t.Errorf("read after peek: %q %v", buf, err)
				}
			}
		})
	}
}
