package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/api"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
	"watchdog/wire"
)

// daemon is a real API over a real store on httptest.
type daemon struct {
	st  *sqlite.Store
	w   *transitions.Writer
	srv *httptest.Server
}

func newDaemon(t *testing.T, token string) *daemon {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "watchdog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := &transitions.Writer{Store: st}
	srv := httptest.NewServer(api.New(api.Options{Store: st, Writer: w, Tokens: adminTokens(token)}))
	t.Cleanup(srv.Close)
	return &daemon{st: st, w: w, srv: srv}
}

func TestRoundTrip(t *testing.T) {
	d := newDaemon(t, "tok")
	c := New(strings.TrimPrefix(d.srv.URL, "http://")+"/", "tok") // bare host:port and a trailing slash
	ctx := context.Background()

	e, created, err := c.Register(ctx, wire.Register{Type: "run", ID: "s-1", Label: "reviewer", Lifecycle: wire.OptString{Set: true, Value: "running"}})
	if err != nil || !created || e.Type != "session" || *e.Lifecycle != "running" {
		t.Fatalf("register: %+v %v %v", e, created, err)
	}
	if _, created, err = c.Register(ctx, wire.Register{Type: "session", ID: "s-1", Label: "renamed"}); err != nil || created {
		t.Fatalf("re-register: created=%v %v", created, err)
	}
	// The three states of lifecycle survive the trip: null is legacy,
	// omitted is the type's initial state.
	if e, _, err := c.Register(ctx, wire.Register{Type: "play", ID: "p-old", Lifecycle: wire.OptString{Set: true, Null: true}}); err != nil || e.Lifecycle != nil || !e.State.Legacy() {
		t.Errorf("legacy registration: %+v %v", e, err)
	}
	if e, _, err := c.Register(ctx, wire.Register{Type: "play", ID: "p-new"}); err != nil || e.Lifecycle == nil || *e.Lifecycle != "planned" {
		t.Errorf("default lifecycle: %+v %v", e, err)
	}
	if err := c.Heartbeat(ctx, "session", "s-1", "step 2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Heartbeat(ctx, "session", "s-1", ""); err != nil {
		t.Fatal(err)
	}
	res, err := c.Transition(ctx, "session", "s-1", wire.Transition{To: "failed", ExpectFrom: "running", Reason: &wire.Reason{Code: "run.failed.exit_nonzero", Message: "exit 2"}})
	if err != nil || *res.Lifecycle != "failed" || res.Label != "renamed" {
		t.Fatalf("transition: %+v %v", res, err)
	}
	if res.From != "running" {
		t.Errorf("transition from %q, want running", res.From)
	}
	got, err := c.Entity(ctx, "run", "s-1")
	if err != nil || got.Transitions == nil || len(*got.Transitions) != 2 || got.HeartbeatAt.IsZero() {
		t.Fatalf("entity: %+v %v", got, err)
	}
}

// TestErrorsMatchTheLocalPath: the same refused request gives the same
// sentinel and the same one line through the API as through the local
// write path.
func TestErrorsMatchTheLocalPath(t *testing.T) {
	d := newDaemon(t, "")
	c := New(d.srv.URL, "")
	ctx := context.Background()
	running := "running"
	if _, err := d.w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: "s-1", Lifecycle: &running}, Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		typ, id  string
		t        wire.Transition
		sentinel error
	}{
		{"not found", "session", "nobody", wire.Transition{To: "completed"}, transitions.ErrNotFound},
		{"unknown type", "spaceship", "s-1", wire.Transition{To: "completed"}, transitions.ErrUnknownType},
		{"conflict", "session", "s-1", wire.Transition{To: "completed", ExpectFrom: "pending"}, transitions.ErrConflict},
		{"invalid edge", "session", "s-1", wire.Transition{To: "pending"}, transitions.ErrInvalidTransition},
		{"unknown state", "session", "s-1", wire.Transition{To: "dancing"}, transitions.ErrUnknownState},
		{"unknown reason", "session", "s-1", wire.Transition{To: "failed", Reason: &wire.Reason{Code: "run.failed.gremlins"}}, transitions.ErrUnknownReason},
		{"reason required", "session", "s-1", wire.Transition{To: "failed"}, transitions.ErrReasonRequired},
		{"forbidden", "session", "s-1", wire.Transition{To: "completed", Actor: "admin"}, transitions.ErrForbidden},
		{"invalid input", "session", "s-1", wire.Transition{To: "completed", Trigger: "whim"}, transitions.ErrInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := tc.t.Request(tc.typ, tc.id, transitions.ActorOrchestrator)
			if err != nil {
				t.Fatal(err)
			}
			_, local := d.w.Transition(ctx, req)
			_, remote := c.Transition(ctx, tc.typ, tc.id, tc.t)
			if !errors.Is(local, tc.sentinel) || !errors.Is(remote, tc.sentinel) {
				t.Fatalf("local %v / remote %v, want %v", local, remote, tc.sentinel)
			}
			if local.Error() != remote.Error() {
				t.Errorf("different lines:\nlocal  %s\nremote %s", local, remote)
			}
			var apiErr *Error
			if !errors.As(remote, &apiErr) || apiErr.Status < 400 || apiErr.Cause != transitions.Cause(local) {
				t.Errorf("remote error %#v", remote)
			}
		})
	}
	// Errors only the API makes.
	if _, _, err := c.Register(ctx, wire.Register{Type: "session"}); !errors.Is(err, wire.ErrBadInput) || !strings.Contains(err.Error(), `"id" is required`) {
		t.Errorf("missing id: %v", err)
	}
	big := wire.Register{Type: "session", ID: "s-2", Label: strings.Repeat("x", wire.MaxBody)}
	if _, _, err := c.Register(ctx, big); !errors.Is(err, wire.ErrTooLarge) {
		t.Errorf("oversized: %v", err)
	}
}

func TestUnauthorized(t *testing.T) {
	d := newDaemon(t, "right")
	for _, tok := range []string{"", "wrong"} {
		c := New(d.srv.URL, tok)
		err := c.Heartbeat(context.Background(), "session", "s-1", "")
		if !errors.Is(err, ErrUnauthorized) || !strings.HasPrefix(err.Error(), "unauthorized: check WATCHDOG_TOKEN_FILE") || strings.Contains(err.Error(), "\n") {
			t.Errorf("token %q: %v", tok, err)
		}
	}
}

func TestTransportFailures(t *testing.T) {
	ctx := context.Background()
	// A proxy's HTML error page.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>bad gateway</html>"))
	}))
	defer proxy.Close()
	err := New(proxy.URL, "").Heartbeat(ctx, "session", "s-1", "")
	var apiErr *Error
	if !errors.Is(err, ErrServer) || !errors.As(err, &apiErr) || apiErr.Status != 502 || !strings.Contains(err.Error(), "502") {
		t.Errorf("502: %v", err)
	}
	// A server slower than the client's timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	c := New(slow.URL, "")
	c.HTTP.Timeout = 50 * time.Millisecond
	start := time.Now()
	if err := c.Heartbeat(ctx, "session", "s-1", ""); err == nil || !strings.Contains(err.Error(), slow.URL) {
		t.Errorf("timeout: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("the timeout did not bound the request")
	}
	// Nobody listening, and no URL at all.
	if err := New("http://127.0.0.1:1", "").Heartbeat(ctx, "session", "s-1", ""); err == nil || !strings.Contains(err.Error(), "server http://127.0.0.1:1") {
		t.Errorf("connection refused: %v", err)
	}
	if err := New("", "").Heartbeat(ctx, "session", "s-1", ""); err == nil || !strings.Contains(err.Error(), "WATCHDOG_SERVER") {
		t.Errorf("no URL: %v", err)
	}
}

// adminTokens is auth.token_file's one admin token; nil (auth: none)
// without one.
func adminTokens(tok string) *api.Tokens {
	if tok == "" {
		return nil
	}
	return api.NewTokens([]api.Token{{Name: "admin", Secret: tok, Scopes: api.ScopeAdmin}})
}
