package api

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// TestLostStoreIs503: once the database file is deleted, every write is
// 503 "unavailable" with Retry-After, and no request logs an error (the
// daemon's store watch logs the loss once).
func TestLostStoreIs503(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(e.st.Path() + suffix); err != nil {
			t.Fatal(err)
		}
	}
	writes := []struct {
		path, body string
	}{
		{"/api/v1/entities", `{"type":"session","id":"s-2","lifecycle":"running"}`},
		{"/api/v1/entities/session/s-1/heartbeat", `{}`},
		{"/api/v1/entities/session/s-1/transitions", `{"to":"completed"}`},
	}
	for _, w := range writes {
		r := e.do("POST", w.path, w.body)
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("POST %s after rm: %d %s, want 503", w.path, r.status, r.body)
			continue
		}
		if eb := r.errorBody(t); eb.Cause != "unavailable" || strings.Contains(eb.Error, ".db") {
			t.Errorf("POST %s: body %+v", w.path, eb)
		}
		if r.header.Get("Retry-After") == "" {
			t.Errorf("POST %s: no Retry-After", w.path)
		}
	}
	if n := e.logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != 0 {
		t.Errorf("%d error lines for refused requests: %v", n, e.logs.FilterLevelExact(zapcore.ErrorLevel).All())
	}
}
