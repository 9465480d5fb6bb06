package e2e

// The HTTP server's bounds (ADR-0034) on the built binary: a flood of
// slow-header connections, more than http.max_connections plus its
// reserve, leaves /readyz, /metrics and a write over the API answering.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"watchdog/internal/testenv"
)

func TestServeSlowClientsDoNotStarveProbesOrWrites(t *testing.T) {
	t.Parallel()
	const maxConns, slow = 64, 200 // 80 connections open at most
	dir, db, _ := svSetup(t, svConfig{})
	cfg := writeFile(t, dir, "config-conns.yaml", svConfig{}.yaml(db)+fmt.Sprintf("http:\n  max_connections: %d\n", maxConns))
	d := svStart(t, cfg, db)
	u, err := url.Parse(d.base)
	if err != nil {
		t.Fatal(err)
	}

	// Each sends part of a request's headers and never the rest: what a
	// slowloris client holds a connection with.
	for i := range slow {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatalf("slow connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write([]byte("POST /api/v1/entities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")); err != nil {
			t.Fatalf("slow connection %d: %v", i, err)
		}
	}
	evicted := `watchdog_http_connections_shed_total{reason="evicted"}`
	testenv.Eventually(t, "the slow connections beyond the cap evicted", svDeadline, func() (bool, string) {
		n := d.metric(evicted)
		return n >= slow-(maxConns+16), fmt.Sprintf("%s %v", evicted, n)
	})

	open := d.metric(`watchdog_http_connections{state="waiting"}`) + d.metric(`watchdog_http_connections{state="active"}`)
	if open > maxConns+16 {
		t.Errorf("%v connections open under the flood, want at most %d", open, maxConns+16)
	}

	// Every check on a connection of its own, made while the flood holds.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: svDeadline}
	for _, path := range []string{"/readyz", "/healthz", "/metrics"} {
		resp, err := fresh.Get(d.base + path)
		if err != nil {
			t.Fatalf("GET %s under the flood: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s under the flood: %d %s", path, resp.StatusCode, body)
		}
	}
	tok, err := os.ReadFile(filepath.Join(dir, "watchdog.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, d.base+"/api/v1/entities", strings.NewReader(`{"type":"session","id":"flood-1","lifecycle":"running"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := fresh.Do(req)
	if err != nil {
		t.Fatalf("register under the flood: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("register under the flood: %d %s", resp.StatusCode, body)
	}
	if e := d.entity("session", "flood-1"); e.lifecycle() != "running" {
		t.Errorf("registered under the flood: %s", e)
	}
	if n := d.metric(`watchdog_http_connections_shed_total{reason="refused"}`); n != 0 {
		t.Errorf("%v connections refused; every open one was waiting, so none should be", n)
	}
}
