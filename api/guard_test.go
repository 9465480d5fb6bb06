package api

import (
	"context"
	"errors"
	"strings"
	"testing"

	"watchdog/store"
)

// TestBrowserRequestsRefusedAndChangeNothing: what a web page on the host
// can make a browser send (a cross-origin form or fetch, a DNS-rebound
// name) is refused before it reaches the store, with auth on and with
// auth: none alike; what curl and the clients send passes.
func TestBrowserRequestsRefusedAndChangeNothing(t *testing.T) {
	for _, token := range []string{"", "tok-3f9a"} {
		name := "auth none"
		if token != "" {
			name = "token"
		}
		t.Run(name, func(t *testing.T) {
			var opts []envOption
			if token != "" {
				opts = append(opts, withToken(token))
			}
			e := newEnv(t, append(opts, withAllowedHosts("watchdog.example.org"))...)
			e.register("session", "s-1", "running")
			reg := `{"type":"session","id":"s-evil","lifecycle":"running"}`
			abort := `{"to":"aborted","reason":{"code":"run.aborted.operator"}}`
			const abortPath = "/api/v1/entities/session/s-1/transitions"
			for _, c := range []struct {
				name         string
				method, path string
				body         string
				hdr          []string
				status       int
				cause        string
			}{
				{"foreign Origin", "POST", "/api/v1/entities", reg, []string{"Origin", "http://evil.example"}, 403, "cross_origin"},
				{"foreign Origin abort", "POST", abortPath, abort, []string{"Origin", "http://evil.example"}, 403, "cross_origin"},
				{"Origin of another local port", "POST", abortPath, abort, []string{"Origin", "http://127.0.0.1:3000"}, 403, "cross_origin"},
				{"opaque Origin", "POST", abortPath, abort, []string{"Origin", "null"}, 403, "cross_origin"},
				{"Sec-Fetch-Site cross-site", "POST", abortPath, abort, []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross_origin"},
				{"Sec-Fetch-Site same-site", "POST", abortPath, abort, []string{"Sec-Fetch-Site", "same-site"}, 403, "cross_origin"},
				{"text/plain", "POST", "/api/v1/entities", reg, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
				{"text/plain abort", "POST", abortPath, abort, []string{"Content-Type", "text/plain;charset=UTF-8"}, 415, "unsupported_media_type"},
				{"form-encoded", "POST", "/api/v1/entities", "type=session&id=s-evil", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
				{"multipart", "POST", abortPath, "--x--", []string{"Content-Type", "multipart/form-data; boundary=x"}, 415, "unsupported_media_type"},
				{"no Content-Type", "POST", abortPath, abort, []string{"Content-Type", ""}, 415, "unsupported_media_type"},
				{"JSON-like type", "POST", abortPath, abort, []string{"Content-Type", "application/json-patch+json"}, 415, "unsupported_media_type"},
				{"snooze as text", "POST", "/api/attention/snooze", `{"fingerprint":"session:s-1:run.health.stalled","until":9999999999}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
				{"foreign Host write", "POST", abortPath, abort, []string{"Host", "attacker.example"}, 403, "host_not_allowed"},
				{"foreign Host with port", "POST", "/api/v1/entities", reg, []string{"Host", "attacker.example:9715"}, 403, "host_not_allowed"},
				{"foreign Host read", "GET", "/api/v1/entities/session/s-1", "", []string{"Host", "attacker.example"}, 403, "host_not_allowed"},
				{"foreign Host list", "GET", "/api/v1/entities", "", []string{"Host", "attacker.example"}, 403, "host_not_allowed"},
				{"foreign Host metrics", "GET", "/metrics", "", []string{"Host", "attacker.example"}, 403, "host_not_allowed"},
				{"localhost lookalike", "GET", "/api/attention", "", []string{"Host", "localhost.attacker.example"}, 403, "host_not_allowed"},
			} {
				before := e.snapshot()
				r := e.do(c.method, c.path, c.body, c.hdr...)
				if r.status != c.status || r.errorBody(t).Cause != c.cause {
					t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.cause)
				}
				e.assertUnchanged(before, c.name)
			}

			// What non-browser clients and the daemon's own pages send.
			for _, c := range []struct {
				name string
				hdr  []string
			}{
				{"loopback IP", []string{"Host", "127.0.0.1:9715"}},
				{"IPv6 loopback", []string{"Host", "[::1]:9715"}},
				{"another IP (scraped by address)", []string{"Host", "10.1.2.3:9715"}},
				{"localhost", []string{"Host", "localhost:9715"}},
				{"configured name", []string{"Host", "Watchdog.Example.org:9715"}},
			} {
				if r := e.do("GET", "/api/v1/entities/session/s-1", "", c.hdr...); r.status != 200 {
					t.Errorf("GET with %s: %d %s", c.name, r.status, r.body)
				}
			}
			srvHost := strings.TrimPrefix(e.srv.URL, "http://")
			for i, hdr := range [][]string{
				{"Content-Type", "application/json; charset=utf-8"},
				{"Origin", "http://" + srvHost, "Sec-Fetch-Site", "same-origin"},
				{"Sec-Fetch-Site", "none"},
			} {
				id := []string{"ok-charset", "ok-same-origin", "ok-typed"}[i]
				if r := e.do("POST", "/api/v1/entities", `{"type":"session","id":"`+id+`"}`, hdr...); r.status != 201 {
					t.Errorf("register with %v: %d %s", hdr, r.status, r.body)
				}
			}
		})
	}
}

// TestEveryErrorIsJSON: whatever goes wrong after the request line, the
// body is the API's JSON error with a cause.
func TestEveryErrorIsJSON(t *testing.T) {
	e := newEnv(t, withToken("tok"), withReady(func() error { return errors.New("no sweep has completed yet") }))
	p := newEnvWithStore(t, e, panickingStore{e.st})
	for _, c := range []struct {
		name         string
		env          *env
		method, path string
		body         string
		hdr          []string
		status       int
	}{
		{"unknown path", e, "GET", "/nope", "", nil, 404},
		{"wrong method", e, "DELETE", "/api/v1/entities", "", nil, 405},
		{"POST to a GET endpoint", e, "POST", "/metrics", "{}", nil, 405},
		{"not ready", e, "GET", "/readyz", "", nil, 503},
		{"body over 1 MiB", e, "POST", "/api/v1/entities", `{"type":"session","id":"x","label":"` + strings.Repeat("a", 1<<20) + `"}`, nil, 413},
		{"no token", e, "POST", "/api/v1/entities", "{}", []string{"Authorization", ""}, 401},
		{"text body", e, "POST", "/api/v1/entities", "{}", []string{"Content-Type", "text/plain"}, 415},
		{"foreign host", e, "GET", "/healthz", "", []string{"Host", "attacker.example"}, 403},
		{"bad page limit", e, "GET", "/api/v1/entities?limit=0", "", nil, 400},
		{"handler panic", p, "GET", "/api/v1/entities/session/s-1", "", nil, 500},
	} {
		r := c.env.do(c.method, c.path, c.body, c.hdr...)
		if r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", c.name, ct)
		}
		r.errorBody(t)
	}
}

// panickingStore panics on every entity read: a bug in a handler.
type panickingStore struct{ Store }

func (panickingStore) Get(context.Context, string, string) (store.Entity, error) {
	panic("boom")
}
