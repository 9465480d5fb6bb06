package api

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"watchdog/state"
)

// TestScopedTokens: each token may do what its scopes say and no more;
// its writes are audited under its name; a token set replaced while
// serving (SIGHUP) takes effect at once.
func TestScopedTokens(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Tokens = NewTokens([]Token{
			{Name: "reporter", Secret: "rep-secret", Scopes: ScopeReport},
			{Name: "oncall", Secret: "tri-secret", Scopes: ScopeTriage | ScopeRead},
			{Name: "viewer", Secret: "read-secret", Scopes: ScopeRead},
		})
	})
	as := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	if r := e.do("POST", "/api/v1/entities", `{"type":"session","id":"s-1","lifecycle":"running"}`, as("rep-secret")...); r.status != 201 {
		t.Fatalf("report registers: %d %s", r.status, r.body)
	}
	e.observe("session", "s-1", state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	snooze := `{"fingerprint":"session:s-1:run.health.stalled","for":3600}`
	for _, c := range []struct {
		name, method, path, body, tok string
		status                        int
	}{
		{"report may not snooze", "POST", "/api/attention/snooze", snooze, "rep-secret", 403},
		{"report may not dismiss", "POST", "/api/attention/dismiss", `{"fingerprint":"session:s-1:run.health.stalled"}`, "rep-secret", 403},
		{"report may not read", "GET", "/api/v1/entities/session/s-1", "", "rep-secret", 403},
		{"read may not report", "POST", "/api/v1/entities/session/s-1/heartbeat", "", "read-secret", 403},
		{"read may not triage", "POST", "/api/attention/snooze", snooze, "read-secret", 403},
		{"read reads", "GET", "/api/attention", "", "read-secret", 200},
		{"triage may not report", "POST", "/api/v1/entities/session/s-1/transitions", `{"to":"completed"}`, "tri-secret", 403},
		{"triage snoozes", "POST", "/api/attention/snooze", snooze, "tri-secret", 200},
		{"report may not act as admin", "POST", "/api/v1/entities/session/s-1/transitions", `{"to":"aborted","actor":"admin","reason":{"code":"run.aborted.operator"}}`, "rep-secret", 403},
		{"report ends its entity", "POST", "/api/v1/entities/session/s-1/transitions", `{"to":"completed"}`, "rep-secret", 200},
	} {
		before := e.snapshot()
		r := e.do(c.method, c.path, c.body, as(c.tok)...)
		if r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
		}
		if c.status == 403 {
			if r.errorBody(t).Cause != "forbidden" {
				t.Errorf("%s: cause %q", c.name, r.errorBody(t).Cause)
			}
			e.assertUnchanged(before, c.name)
		}
	}
	rows, _ := e.st.Transitions(context.Background(), "session", "s-1")
	for _, row := range rows {
		if row.Principal != "token:reporter" {
			t.Errorf("audit row %d names %q, want token:reporter", row.Seq, row.Principal)
		}
	}
	log, err := e.st.TriageLogBefore(context.Background(), 0, 10)
	if err != nil || len(log) != 1 || log[0].By != "token:oncall" {
		t.Errorf("the triage log: %+v %v, want one row by token:oncall", log, err)
	}
	// Rotated (SIGHUP): the old secret is refused at once, the new one
	// accepted.
	e.h.s.Tokens.Set([]Token{{Name: "viewer", Secret: "read-secret-2", Scopes: ScopeRead}})
	if r := e.do("GET", "/api/attention", "", as("read-secret")...); r.status != 401 {
		t.Errorf("a rotated-out token: %d", r.status)
	}
	if r := e.do("GET", "/api/attention", "", as("read-secret-2")...); r.status != 200 {
		t.Errorf("the rotated-in token: %d", r.status)
	}
}

// TestPublicReads: auth.public_reads opens the reads to a caller with no
// token, and nothing else.
func TestPublicReads(t *testing.T) {
	e := newEnv(t, withToken("adm"), func(o *Options) { o.PublicReads = true })
	e.register("session", "s-1", "running")
	if r := e.do("GET", "/api/v1/entities/session/s-1", "", "Authorization", ""); r.status != 200 {
		t.Errorf("a public read: %d", r.status)
	}
	if r := e.do("POST", "/api/v1/entities/session/s-1/heartbeat", "", "Authorization", ""); r.status != 401 {
		t.Errorf("an anonymous write with public reads: %d", r.status)
	}
}

// TestRefusedBeforeBody: a request refused on its headers is answered at
// once and its connection closed, its body never waited for: a client
// that sends a body slowly holds nothing for it.
func TestRefusedBeforeBody(t *testing.T) {
	e := newEnv(t, withToken("s3cret"))
	for _, c := range []struct{ name, req, status string }{
		{"no token", "POST /api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n{", "401"},
		{"wrong token", "POST /api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer nope\r\nContent-Length: 200000\r\n\r\n", "401"},
		{"no such path", "POST /api/v1/nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\nContent-Length: 200000\r\n\r\n", "404"},
	} {
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(c.req)); err != nil {
			t.Fatal(err)
		}
		// The test's bound only: the server closes at once, or never.
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Errorf("%s: %v after %q (the connection was kept, waiting for the body)", c.name, err, got)
			continue
		}
		if !strings.HasPrefix(string(got), "HTTP/1.1 "+c.status) || !strings.Contains(string(got), "Connection: close") {
			t.Errorf("%s: answer %q, want %s with Connection: close", c.name, got, c.status)
		}
	}
}
