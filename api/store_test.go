package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"watchdog/store"
	"watchdog/wire"
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

// faultyStore is base's store with chosen failures: a heartbeat's write,
// or every Get (a read-back after a write that committed).
type faultyStore struct {
	Store
	heartbeatErr, getErr error
}

func (f faultyStore) RecordHeartbeat(ctx context.Context, typ, id string, at time.Time, progress string) error {
	if f.heartbeatErr != nil {
		return f.heartbeatErr
	}
	return f.Store.RecordHeartbeat(ctx, typ, id, at, progress)
}

func (f faultyStore) Get(ctx context.Context, typ, id string) (store.Entity, error) {
	if f.getErr != nil {
		return store.Entity{}, f.getErr
	}
	return f.Store.Get(ctx, typ, id)
}

// TestStoreFailureStatus: what the store says of a failed write decides
// the status, by store.Classify alone: 503 "unavailable" only when nothing
// was written, 504 "outcome_unknown" when the commit's result was lost,
// 500 for a fault. A write that committed is never answered with an
// error, even when reading it back for the response fails.
func TestStoreFailureStatus(t *testing.T) {
	base := newEnv(t)
	base.register("session", "s-1", "running")
	readBack := fmt.Errorf("read entity: %w", errors.New("unable to open database file (14)"))
	tests := []struct {
		name       string
		st         faultyStore
		path, body string
		status     int
		cause      string
		written    bool // the heartbeat or registration is in the store afterwards
	}{
		{"heartbeat not written", faultyStore{heartbeatErr: fmt.Errorf("record heartbeat: %w: disk full", store.ErrUnavailable)},
			"/api/v1/entities/session/s-1/heartbeat", `{"progress":"a"}`, http.StatusServiceUnavailable, "unavailable", false},
		{"heartbeat outcome unknown", faultyStore{heartbeatErr: fmt.Errorf("record heartbeat: %w: connection lost after COMMIT", store.ErrOutcomeUnknown)},
			"/api/v1/entities/session/s-1/heartbeat", `{"progress":"b"}`, http.StatusGatewayTimeout, "outcome_unknown", false},
		{"heartbeat fault", faultyStore{heartbeatErr: errors.New("record heartbeat: a bug")},
			"/api/v1/entities/session/s-1/heartbeat", `{"progress":"c"}`, http.StatusInternalServerError, "internal", false},
		{"heartbeat recorded, read-back failed", faultyStore{getErr: readBack},
			"/api/v1/entities/session/s-1/heartbeat", `{"progress":"d"}`, http.StatusOK, "", true},
		{"registered, read-back failed", faultyStore{getErr: readBack},
			"/api/v1/entities", `{"type":"session","id":"s-2","lifecycle":"running"}`, http.StatusCreated, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.st.Store = base.st
			e := newEnvWithStore(t, base, tt.st)
			r := e.do("POST", tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("POST %s: %d %s, want %d", tt.path, r.status, r.body, tt.status)
			}
			if tt.cause != "" {
				if eb := r.errorBody(t); eb.Cause != tt.cause {
					t.Errorf("cause %q (%s), want %q", eb.Cause, eb.Error, tt.cause)
				}
			}
			if (r.status == http.StatusServiceUnavailable) != (r.header.Get("Retry-After") != "") {
				t.Errorf("Retry-After %q on a %d", r.header.Get("Retry-After"), r.status)
			}
			if p, ok := strings.CutPrefix(tt.body, `{"progress":"`); ok {
				want := strings.TrimSuffix(p, `"}`)
				cur, err := base.st.Get(context.Background(), "session", "s-1")
				if err != nil {
					t.Fatal(err)
				}
				if (cur.HeartbeatProgress == want) != tt.written {
					t.Errorf("stored progress %q after a %d (written %v)", cur.HeartbeatProgress, r.status, tt.written)
				}
			}
			if !tt.written {
				return
			}
			var got wire.Entity
			e.decode(r, &got)
			id := "s-1"
			if strings.Contains(tt.body, "s-2") {
				id = "s-2"
			}
			if got.Type != "session" || got.ID != id {
				t.Errorf("body names %s/%s, want session/%s", got.Type, got.ID, id)
			}
			if _, err := base.st.Get(context.Background(), "session", id); err != nil {
				t.Errorf("answered %d but not in the store: %v", r.status, err)
			}
		})
	}
}
