package wire

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// fuzzWriter is a real write path on a real SQLite file, one per fuzzing
// process: what the API does with a body, minus HTTP.
func fuzzWriter(f *testing.F) (*transitions.Writer, *sqlite.Store) {
	st, err := sqlite.Open(context.Background(), filepath.Join(f.TempDir(), "fuzz.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	return &transitions.Writer{Store: st, Now: time.Now}, st
}

// checkRefusal fails unless err is a refusal of bad input: a body, however
// odd, is never a store error (a 500).
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrBadInput) || errors.Is(err, ErrTooLarge) {
		return
	}
	if c := transitions.Cause(err); c == transitions.CauseStoreError {
		t.Fatalf("a request body reached the store as an error (would be a 500): %v", err)
	}
}

// FuzzRegister feeds register bodies through strict decoding, the wire
// checks and the real write path: no panic, no store error, and what is
// accepted reads back as registered.
func FuzzRegister(f *testing.F) {
	for _, seed := range []string{
		`{"type":"session","id":"s-1"}`,
		`{"type":"session","id":"s-2","label":"x","lifecycle":"running","pid":1,"heartbeat_file":"/tmp/hb","timeout_seconds":900,"artifacts_root":"/tmp","artifacts":[{"path":"a/*.json","kind":"json","min_bytes":1,"newer_than_start":true}],"lock_files":["/tmp/l"],"parent":{"type":"play","id":"p"},"depends_on":["p0"],"schedule":{"cron":"*/5 * * * *","last_fired_at":1},"metadata":{"a":{"b":[1,2]}}}`,
		`{"type":"agent","id":"a","lifecycle":null}`,
		`{"type":"schedule","id":"c","schedule":{"cron":"nope"}}`,
		`{"type":"session","id":"s","metadata":[1]}`,
		`{"type":"session","id":"../x"}`,
		`{"type":"session","id":"s","pid":-1,"pid_start_time":1e308}`,
		`{"type":"session","id":"s","pid":4194304,"pid_start_time":1e18,"timeout_seconds":1e18}`,
		`{"type":"session","id":"s","PID_START_TIME":9.3e18,"Pid_Start_Time":1716517000}`,
		`{"type":"session","id":"s","artifacts_root":"/r","artifacts":[{"path":"a","min_bytes":9007199254740992}]}`,
		`{}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	w, st := fuzzWriter(f)
	now := time.Now()
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Register
		if err := DecodeAt(bytes.NewReader(body), &r, false, now); err != nil {
			checkRefusal(t, err)
			return
		}
		checkInRange(t, &r, now)
		reg, err := r.Registration(transitions.ActorOrchestrator)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if _, err := w.Register(context.Background(), reg); err != nil {
			checkRefusal(t, err)
			return
		}
		e, err := st.Get(context.Background(), reg.Entity.Type, reg.Entity.ID)
		if err != nil {
			t.Fatalf("registered %s/%s, then: %v", reg.Entity.Type, reg.Entity.ID, err)
		}
		if e.Type != reg.Entity.Type || e.ID != reg.Entity.ID {
			t.Fatalf("registered %s/%s, read back %s/%s", reg.Entity.Type, reg.Entity.ID, e.Type, e.ID)
		}
	})
}

// FuzzTransition feeds transition bodies at a running session through the
// real write path: no panic, no store error, and whatever happens the
// stored lifecycle is the target of the last audit row.
func FuzzTransition(f *testing.F) {
	for _, seed := range []string{
		`{"to":"completed"}`,
		`{"to":"failed","reason":{"code":"run.failed.exit_nonzero","message":"exit 3","evidence":[{"kind":"tool_result","detail":"x"}]}}`,
		`{"to":"aborted","reason":{"code":"system.health.process_dead_no_terminal"}}`,
		`{"to":"timed_out","reason":{"code":"run.timed_out.deadline"},"timeout_seconds":1,"elapsed_seconds":2}`,
		`{"to":"cancelled","actor":"admin","reason":{"code":"run.cancelled.sigterm"},"expect_from":"running"}`,
		`{"to":"running","actor":"reaper"}`,
		`{"to":"failed","reason":{"code":"Bad Code"}}`,
		`{"to":"completed","trigger":"whim"}`,
		`{"to":""}`, `{}`, `{"to":1}`,
	} {
		f.Add([]byte(seed))
	}
	w, st := fuzzWriter(f)
	ctx := context.Background()
	n := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		// A fresh running session each time, so every edge is reachable.
		n++
		id := "s" + time.Now().Format("150405.000000000") + "-" + string(rune('a'+n%26))
		running := "running"
		if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: id, Lifecycle: &running}, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
		var tr Transition
		if err := Decode(bytes.NewReader(body), &tr, false); err != nil {
			checkRefusal(t, err)
			return
		}
		for _, n := range []struct {
			name string
			v    float64
			r    transitions.Range
		}{
			{"timeout_seconds", tr.TimeoutSeconds, transitions.TimeoutRange()},
			{"elapsed_seconds", tr.ElapsedSeconds, transitions.ElapsedRange()},
		} {
			if !n.r.Contains(n.v) {
				t.Fatalf("accepted %s %v, outside %s", n.name, n.v, n.r)
			}
		}
		req, err := tr.Request("session", id, transitions.ActorOrchestrator)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if req.Actor == transitions.ActorReaper {
			return // the API refuses the reaper actor before the write path
		}
		if _, err := w.Transition(ctx, req); err != nil {
			checkRefusal(t, err)
		}
		e, err := st.Get(ctx, "session", id)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := st.Transitions(ctx, "session", id)
		if err != nil || len(rows) == 0 {
			t.Fatalf("audit rows: %v, %v", rows, err)
		}
		if last := rows[len(rows)-1]; last.To != e.LifecycleOr("") {
			t.Fatalf("lifecycle %s but the last audit row says %s", e.LifecycleOr(""), last.To)
		}
	})
}

// checkInRange fails unless every number of an accepted registration is
// in its range: whatever spelling of a key the decoder took, the range
// check saw it too.
func checkInRange(t *testing.T, r *Register, now time.Time) {
	t.Helper()
	tr := transitions.TimeRange(now)
	nums := []struct {
		name string
		v    float64
		r    transitions.Range
	}{
		{"pid", float64(r.PID), transitions.PIDRange()},
		{"supervisor_pid", float64(r.SupervisorPID), transitions.PIDRange()},
		{"pid_start_time", unixtime.Seconds(r.PIDStartTime.Time), tr},
		{"supervisor_start_time", unixtime.Seconds(r.SupervisorStartTime.Time), tr},
		{"timeout_seconds", r.TimeoutSeconds, transitions.TimeoutRange()},
	}
	if r.Schedule != nil {
		nums = append(nums, struct {
			name string
			v    float64
			r    transitions.Range
		}{"schedule.last_fired_at", unixtime.Seconds(r.Schedule.LastFiredAt.Time), tr})
	}
	for _, a := range r.Artifacts {
		if !transitions.BytesRange().Contains(float64(a.MinBytes)) {
			t.Fatalf("accepted min_bytes %d", a.MinBytes)
		}
	}
	for _, n := range nums {
		// A time keeps microseconds: allow the rounding at the edges.
		if !n.r.Contains(n.v) && !(n.r.Contains(n.v-1e-6) || n.r.Contains(n.v+1e-6)) {
			t.Fatalf("accepted %s %v, outside %s", n.name, n.v, n.r)
		}
	}
}
