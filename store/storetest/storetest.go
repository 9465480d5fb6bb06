// Package storetest is the one conformance suite of store.Backend: the
// behaviour every store must have, run against SQLite (from package sqlite's
// tests) and PostgreSQL (from package postgres's) alike. A backend supplies
// a Harness; what only its own SQL can do (a bare UPDATE that bypasses the
// write path) is a hook of it. Imported by tests only.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Harness is how the suite reaches one backend.
type Harness struct {
	// New makes a new, empty store for t and returns its DSN (what Open
	// takes); the suite opens its handles with Open and closes them.
	New func(t *testing.T) string
	// Open opens a handle on the store at dsn, as another process would.
	Open func(ctx context.Context, dsn string) (store.Backend, error)
	// BareLifecycleUpdate sets an entity's lifecycle with a plain SQL
	// UPDATE beside the store, bypassing the write path; the audit guard
	// must refuse it (the error is what the backend answered).
	BareLifecycleUpdate func(t *testing.T, dsn, typ, id, lifecycle string) error
	// HoldWrite, when the backend lets writers run beside an open write
	// transaction (PostgreSQL), opens one beside the store that sets the
	// entity's heartbeat progress to progress and appends an audit row
	// whose message is progress, and leaves it open; commit commits it.
	// Nil for SQLite, whose one writer would block every other.
	HoldWrite func(t *testing.T, dsn, typ, id, progress string) (commit func())
	// Quiesce, when not nil, waits until no statement a killed writer
	// sent still runs on the server (PostgreSQL finishes, and commits, a
	// statement in flight when its client died): the crash test's check
	// then reads a store at rest, not one that moves between its reads.
	Quiesce func(t *testing.T, dsn string)
}

// Run runs the whole suite against h's backend.
func Run(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"RegisterUpsert", testRegisterUpsert},
		{"OwnersAndPrincipals", testOwners},
		{"TransitionWritesAuditRowInSameTransaction", testTransitionAudit},
		{"RefusedDecisionWritesNothing", testRefusedDecision},
		{"AuditGuardRefusesBareUpdate", testAuditGuard},
		{"ObservationWritesOnlyOnChange", testObservation},
		{"HeartbeatExitAndNotFound", testHeartbeatExit},
		{"ListFilters", testListFilters},
		{"ReapCandidatesAlone", testReapCandidates},
		{"RevisionsOnly", testRevisionsOnly},
		{"TransitionPages", testPages},
		{"Dismissals", testDismissals},
		{"DismissalBatchAllOrNothingWithTriageLog", testDismissalBatch},
		{"VacuumKeepsAnEscalatedOccurrence", testVacuumEscalated},
		{"TriageLogNewestFirstAndVacuum", testTriagePagesAndVacuum},
		{"DaemonPresence", testDaemons},
		{"FeedAcrossHandles", testFeed},
		{"FeedByHost", testFeedByHost},
		{"DataVersionMovesOnAnotherHandlesCommit", testDataVersion},
		{"FeedMissesNothingUnderConcurrentWriters", testFeedConcurrent},
		{"ConcurrentTerminationsOneWinner", testRace},
		{"CrashAtAnyInstant", testCrash},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// open opens a handle closed at the end of t.
func open(t *testing.T, h Harness, dsn string) store.Backend {
	t.Helper()
	s, err := h.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func strp(s string) *string { return &s }

func register(t *testing.T, s store.Backend, typ, id string, lifecycle *string, mod func(*store.Entity)) {
	t.Helper()
	e := store.Entity{Type: typ, ID: id, Lifecycle: lifecycle}
	if mod != nil {
		mod(&e)
	}
	if _, err := s.Register(context.Background(), e, "orchestrator", t0); err != nil {
		t.Fatalf("register %s/%s: %v", typ, id, err)
	}
}

// move applies a transition to to through the store alone.
func move(s store.Backend, typ, id, to string, terminal bool, at time.Time) (store.Entity, store.Entity, error) {
	return s.ApplyTransition(context.Background(), typ, id, func(cur store.Entity) (store.Change, error) {
		r := state.Observed(state.SystemHealthProcessDeadNoTerminal, "test")
		return store.Change{To: to, Terminal: terminal, Actor: "reaper", Reason: &r, At: at}, nil
	})
}

func testRegisterUpsert(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	e := store.Entity{Type: "session", ID: "s1", Label: "first", Lifecycle: strp("running"), HostID: "h1", PID: 42,
		PIDStartTime: t0.Add(-time.Minute), LockFiles: []string{"/tmp/a.lock"}, Metadata: []byte(`{"k":"v"}`), Timeout: 90 * time.Second}
	created, err := s.Register(ctx, e, "orchestrator", t0)
	if err != nil || !created {
		t.Fatalf("first register: created %v, %v", created, err)
	}
	rows, err := s.Transitions(ctx, "session", "s1")
	if err != nil || len(rows) != 1 || rows[0].From != nil || rows[0].To != "running" || rows[0].Message != "registered" {
		t.Fatalf("registration audit: %+v %v", rows, err)
	}
	if x, err := s.RecordObservation(ctx, "session", "s1", store.Observation{Health: state.HealthProcessDead, SeenSeq: rows[0].Seq, At: t0.Add(time.Second),
		Exit: &state.ExitStatus{Code: 3, At: t0.Add(time.Second)}, PID: 42}); err != nil || !x {
		t.Fatalf("record exit: %v %v", x, err)
	}
	// A re-registration that only renames keeps everything it leaves out,
	// and never changes the lifecycle.
	created, err = s.Register(ctx, store.Entity{Type: "session", ID: "s1", Label: "renamed", Lifecycle: strp("completed")}, "orchestrator", t0.Add(time.Minute))
	if err != nil || created {
		t.Fatalf("re-register: created %v, %v", created, err)
	}
	got, err := s.Get(ctx, "session", "s1")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case got.Label != "renamed", got.LifecycleOr("") != "running", got.PID != 42, got.HostID != "h1",
		len(got.LockFiles) != 1, string(got.Metadata) != `{"k":"v"}`, got.Timeout != 90*time.Second,
		!got.PIDStartTime.Equal(t0.Add(-time.Minute)), !got.CreatedAt.Equal(t0), !got.UpdatedAt.Equal(t0.Add(time.Minute)),
		got.Exit == nil || got.Exit.Code != 3:
		t.Errorf("after re-register: %+v", got)
	}
	// A new pid brings its own identity and no exit status; an empty list
	// clears.
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "s1", PID: 43, LockFiles: []string{}}, "orchestrator", t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Get(ctx, "session", "s1")
	if got.PID != 43 || !got.PIDStartTime.IsZero() || got.Exit != nil || len(got.LockFiles) != 0 {
		t.Errorf("after new pid: pid %d start %v exit %+v locks %v", got.PID, got.PIDStartTime, got.Exit, got.LockFiles)
	}
	if rows, _ := s.Transitions(ctx, "session", "s1"); len(rows) != 1 {
		t.Errorf("re-registrations wrote %d audit rows, want the one", len(rows))
	}
	// A legacy entity (no lifecycle) has no audit row.
	register(t, s, "session", "legacy", nil, nil)
	if rows, _ := s.Transitions(ctx, "session", "legacy"); len(rows) != 0 {
		t.Errorf("legacy entity has audit rows %+v", rows)
	}
	if _, err := s.Get(ctx, "session", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get missing: %v, want ErrNotFound", err)
	}
}

func testTransitionAudit(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	register(t, s, "session", "s1", strp("running"), func(e *store.Entity) {
		e.Reasons = nil
	})
	before, after, err := s.ApplyTransition(ctx, "session", "s1", func(cur store.Entity) (store.Change, error) {
		r := state.Observed(state.SystemHealthProcessDeadNoTerminal, "gone")
		return store.Change{To: "aborted", Terminal: true, Actor: "reaper", Trigger: "sweep", Reason: &r, At: t0.Add(time.Hour),
			Delivery: &store.DeliveryRecord{Delivery: state.DeliveryMissing}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Transitions(ctx, "session", "s1")
	if err != nil || len(rows) != 2 {
		t.Fatalf("audit rows %+v %v", rows, err)
	}
	last := rows[1]
	switch {
	case before.LifecycleOr("") != "running", after.LifecycleOr("") != "aborted", !after.Terminal,
		after.LastSeq != last.Seq, last.From == nil || *last.From != "running", last.To != "aborted",
		last.Actor != "reaper", last.Trigger != "sweep", last.ReasonCode != string(state.SystemHealthProcessDeadNoTerminal),
		!last.At.Equal(t0.Add(time.Hour)), !after.EndedAt.Equal(t0.Add(time.Hour)), after.Delivery != state.DeliveryMissing,
		after.TransitionReason == nil || after.TransitionReason.Message != "gone":
		t.Errorf("before %+v\nafter %+v\naudit %+v", before, after, last)
	}
	got, _ := s.Get(ctx, "session", "s1")
	if got.LastSeq != last.Seq || got.Revision != after.Revision {
		t.Errorf("stored last_seq %d revision %d, answered %d %d", got.LastSeq, got.Revision, last.Seq, after.Revision)
	}
	if _, _, err := move(s, "session", "nope", "aborted", true, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("transition of a missing entity: %v", err)
	}
}

func testRefusedDecision(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	register(t, s, "session", "s1", strp("running"), nil)
	was, _ := s.Get(ctx, "session", "s1")
	refusal := errors.New("refused")
	before, _, err := s.ApplyTransition(ctx, "session", "s1", func(cur store.Entity) (store.Change, error) {
		return store.Change{}, refusal
	})
	if !errors.Is(err, refusal) || before.LifecycleOr("") != "running" {
		t.Fatalf("refused: %v, before %+v", err, before)
	}
	now, _ := s.Get(ctx, "session", "s1")
	rows, _ := s.Transitions(ctx, "session", "s1")
	if now.Revision != was.Revision || now.LastSeq != was.LastSeq || len(rows) != 1 {
		t.Errorf("a refused decision wrote: revision %d→%d, last_seq %d→%d, %d audit rows", was.Revision, now.Revision, was.LastSeq, now.LastSeq, len(rows))
	}
}

func testAuditGuard(t *testing.T, h Harness) {
	ctx := context.Background()
	dsn := h.New(t)
	s := open(t, h, dsn)
	register(t, s, "session", "s1", strp("running"), nil)
	if err := h.BareLifecycleUpdate(t, dsn, "session", "s1", "completed"); err == nil {
		t.Fatal("a lifecycle UPDATE without its audit row was accepted")
	} else {
		t.Logf("refused as it should be: %v", err)
	}
	got, _ := s.Get(ctx, "session", "s1")
	if got.LifecycleOr("") != "running" {
		t.Errorf("lifecycle is %s after a refused bare update", got.LifecycleOr(""))
	}
}

func testObservation(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	register(t, s, "session", "s1", strp("running"), func(e *store.Entity) { e.PID = 7 })
	e, _ := s.Get(ctx, "session", "s1")
	o := store.Observation{Health: state.HealthProcessDead, Delivery: state.DeliveryUnknown, HealthSince: t0, DeadSince: t0,
		Reasons: []state.StateReason{state.Observed(state.SystemHealthProcessDeadNoTerminal, "x")}, SeenSeq: e.LastSeq, At: t0}
	for i, want := range []bool{true, false} {
		wrote, err := s.RecordObservation(ctx, "session", "s1", o)
		if err != nil || wrote != want {
			t.Errorf("write %d: wrote %v (want %v), %v", i, wrote, want, err)
		}
	}
	// A judgement that read no death does not erase the one recorded since;
	// one that read it may clear it (the process was alive after all).
	alive := store.Observation{Health: state.HealthRunning, Delivery: state.DeliveryUnknown, HealthSince: t0, SeenSeq: e.LastSeq, At: t0.Add(time.Second)}
	if wrote, err := s.RecordObservation(ctx, "session", "s1", alive); err != nil || wrote {
		t.Errorf("alive over a death it never read: wrote %v, %v", wrote, err)
	}
	alive.SeenDeadSince = t0
	if wrote, err := s.RecordObservation(ctx, "session", "s1", alive); err != nil || !wrote {
		t.Errorf("alive over the death it read: wrote %v, %v", wrote, err)
	}
	if wrote, err := s.RecordObservation(ctx, "session", "s1", o); err != nil || !wrote {
		t.Errorf("the death again: wrote %v, %v", wrote, err)
	}
	// The runner's exit status, read before the death: the status alone is
	// written, the death and its findings stay.
	runner := store.Observation{Health: state.HealthRunning, SeenSeq: e.LastSeq, At: t0.Add(2 * time.Second),
		Exit: &state.ExitStatus{Code: 3, At: t0}, PID: e.PID, Runner: true}
	if wrote, err := s.RecordObservation(ctx, "session", "s1", runner); err != nil || !wrote {
		t.Errorf("the runner's exit status: wrote %v, %v", wrote, err)
	}
	if got, _ := s.Get(ctx, "session", "s1"); got.Health != state.HealthProcessDead || !got.DeadSince.Equal(t0) || got.Exit == nil || got.Exit.Code != 3 {
		t.Errorf("after the runner's exit status: %s dead since %v exit %+v", got.Health, got.DeadSince, got.Exit)
	}
	// An observation of a lifecycle a transition has left is not written.
	if _, _, err := move(s, "session", "s1", "aborted", true, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	o.Health = state.HealthRunning
	if wrote, err := s.RecordObservation(ctx, "session", "s1", o); err != nil || wrote {
		t.Errorf("stale observation: wrote %v, %v", wrote, err)
	}
	got, _ := s.Get(ctx, "session", "s1")
	if got.Health != state.HealthProcessDead || !got.DeadSince.Equal(t0) || len(got.Reasons) != 1 {
		t.Errorf("stored %s dead since %v reasons %v", got.Health, got.DeadSince, got.Reasons)
	}
}

func testHeartbeatExit(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	register(t, s, "session", "s1", strp("running"), func(e *store.Entity) { e.PID = 7 })
	if err := s.RecordHeartbeat(ctx, "session", "s1", t0.Add(time.Second), "half"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordHeartbeat(ctx, "session", "nope", t0, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("heartbeat of a missing entity: %v", err)
	}
	cur, err := s.Get(ctx, "session", "s1")
	if err != nil {
		t.Fatal(err)
	}
	// The exit status is written with the death's observation, once.
	o := store.Observation{Health: state.HealthProcessDead, HealthSince: t0, DeadSince: t0, SeenSeq: cur.LastSeq, At: t0}
	for _, tc := range []struct {
		seq  int64
		pid  int
		x    *state.ExitStatus
		want bool
	}{
		{cur.LastSeq + 1, 7, &state.ExitStatus{Code: 1, At: t0}, false}, // not the lifecycle judged
		{cur.LastSeq, 8, &state.ExitStatus{Code: 1, At: t0}, false},     // another process's
		{cur.LastSeq, 7, &state.ExitStatus{Signal: 9, At: t0}, true},
		{cur.LastSeq, 7, &state.ExitStatus{Signal: 9, At: t0}, false}, // the same again
		{cur.LastSeq, 7, nil, false},                                  // nil leaves it
	} {
		o.SeenSeq, o.PID, o.Exit = tc.seq, tc.pid, tc.x
		if got, err := s.RecordObservation(ctx, "session", "s1", o); err != nil || got != tc.want {
			t.Errorf("record exit seq %d %+v: %v %v, want %v", tc.seq, tc.x, got, err, tc.want)
		}
	}
	got, _ := s.Get(ctx, "session", "s1")
	if !got.HeartbeatAt.Equal(t0.Add(time.Second)) || got.HeartbeatProgress != "half" || got.Exit == nil || got.Exit.Signal != 9 {
		t.Errorf("heartbeat %v %q exit %+v", got.HeartbeatAt, got.HeartbeatProgress, got.Exit)
	}
}

func testListFilters(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	register(t, s, "session", "b", strp("running"), func(e *store.Entity) { e.HostID = "h1" })
	register(t, s, "session", "a", strp("running"), func(e *store.Entity) { e.HostID = "h2"; e.PID = 5 })
	register(t, s, "session", "B", strp("running"), func(e *store.Entity) { e.HostID = "h2" })
	register(t, s, "play", "p", strp("running"), func(e *store.Entity) { e.ParentType, e.ParentID = "show", "x" })
	register(t, s, "session", "old", nil, nil)
	register(t, s, "session", "done", strp("running"), func(e *store.Entity) { e.HostID = "h1" })
	if _, _, err := move(s, "session", "done", "completed", true, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Ended with no ended_at (registered ended, beside the write path): it
	// ages from lifecycle_at, as the failure window does everywhere (attention.Arrived).
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "ended", Lifecycle: strp("completed"), Terminal: true, HostID: "h3"},
		"orchestrator", t0.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	ids := func(f store.Filter) string {
		list, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, e := range list {
			out += e.Type + "/" + e.ID + " "
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.Filter
		want string
	}{
		{"all, in byte order", store.Filter{}, "play/p session/B session/a session/b session/done session/ended session/old "},
		{"type", store.Filter{Type: "play"}, "play/p "},
		{"host", store.Filter{HostID: "h1"}, "session/b session/done "},
		{"host and remote live", store.Filter{HostID: "h1", AlsoRemoteLive: true}, "session/a session/b session/done "},
		{"open", store.Filter{Type: "session", OpenOnly: true}, "session/B session/a session/b "},
		{"open or ended since", store.Filter{Type: "session", OpenOnly: true, EndedSince: t0.Add(time.Minute)}, "session/B session/a session/b session/done session/ended "},
		{"ended since by lifecycle_at, no ended_at", store.Filter{HostID: "h3", OpenOnly: true, EndedSince: t0.Add(80 * time.Minute)}, "session/ended "},
		{"ended before the window", store.Filter{Type: "session", OpenOnly: true, EndedSince: t0.Add(2 * time.Hour)}, "session/B session/a session/b "},
		{"parent", store.Filter{ParentType: "show", ParentID: "x"}, "play/p "},
		{"dead only", store.Filter{DeadOnly: true}, ""},
		{"a page", store.Filter{Limit: 2}, "play/p session/B "},
		{"after a key", store.Filter{After: store.Key{Type: "session", ID: "B"}}, "session/a session/b session/done session/ended session/old "},
		{"after a key no row has", store.Filter{After: store.Key{Type: "session", ID: "Ba"}}, "session/a session/b session/done session/ended session/old "},
		{"after a type alone", store.Filter{After: store.Key{Type: "play"}}, "play/p session/B session/a session/b session/done session/ended session/old "},
		{"after the last", store.Filter{After: store.Key{Type: "session", ID: "old"}}, ""},
		{"a page after a key", store.Filter{After: store.Key{Type: "play", ID: "p"}, Limit: 2}, "session/B session/a "},
		{"a page of a selection", store.Filter{HostID: "h1", AlsoRemoteLive: true, OpenOnly: true, After: store.Key{Type: "session", ID: "a"}, Limit: 1}, "session/b "},
	} {
		if got := ids(tc.f); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// Walked a page at a time, each page after the last key of the one
	// before, the pages are the whole list once.
	for _, limit := range []int{1, 2, 5, 6, 7, 8} {
		got := ""
		f := store.Filter{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("limit %d: more than 10 pages (%q so far)", limit, got)
			}
			list, err := s.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(list))
			}
			for _, e := range list {
				got += e.Type + "/" + e.ID + " "
			}
			if len(list) < limit {
				break
			}
			f.After = store.KeyOf(&list[len(list)-1])
		}
		if want := ids(store.Filter{}); got != want {
			t.Errorf("limit %d: paged %q, want %q", limit, got, want)
		}
	}
	cands, err := s.AttentionCandidates(ctx, t0.Add(2*time.Hour))
	if err != nil || len(cands) != 4 {
		t.Errorf("attention candidates past the window: %d, %v (want the 4 open ones)", len(cands), err)
	}
	cands, _ = s.AttentionCandidates(ctx, t0)
	if len(cands) != 6 {
		t.Errorf("attention candidates in the window: %d, want 6", len(cands))
	}
}

// testReapCandidates: Filter.PhantomBefore keeps what reap_phantoms may
// act on and nothing else (its rule: judge.PhantomDue by the row): the
// open entities of the host (and the host-less) recorded process_dead or
// orphaned with no activity after the cut, and every open entity of the
// reconciled types, once, in key order, a page at a time.
func testReapCandidates(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	observe := func(typ, id string, health state.Health) {
		t.Helper()
		e, err := s.Get(ctx, typ, id)
		if err != nil {
			t.Fatal(err)
		}
		o := store.Observation{Health: health, HealthSince: t0, SeenSeq: e.LastSeq, At: t0}
		if health == state.HealthProcessDead {
			o.DeadSince = t0
		}
		if _, err := s.RecordObservation(ctx, typ, id, o); err != nil {
			t.Fatal(err)
		}
	}
	onHost := func(h string) func(*store.Entity) { return func(e *store.Entity) { e.HostID = h } }
	for _, id := range []string{"dead", "orphan", "fine", "beat", "started", "moved", "ended", "other", "hostless"} {
		host := "h1"
		switch id {
		case "other":
			host = "h2"
		case "hostless":
			host = ""
		}
		register(t, s, "session", id, strp("running"), onHost(host))
		health := state.HealthProcessDead
		switch id {
		case "orphan":
			health = state.HealthOrphaned
		case "fine":
			health = state.HealthRunning
		}
		observe("session", id, health)
	}
	// Activity after the cut: a heartbeat, a (re-registered) start, a
	// lifecycle change; and an end.
	cut := t0.Add(time.Hour)
	if err := s.RecordHeartbeat(ctx, "session", "beat", cut.Add(time.Second), ""); err != nil {
		t.Fatal(err)
	}
	register(t, s, "session", "started", nil, func(e *store.Entity) { e.StartedAt = cut.Add(time.Second) })
	if _, _, err := s.ApplyTransition(ctx, "session", "moved", func(store.Entity) (store.Change, error) {
		return store.Change{To: "idle", Actor: "orchestrator", At: cut.Add(time.Second)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := move(s, "session", "ended", "aborted", true, t0); err != nil {
		t.Fatal(err)
	}
	// The reconciled types: every open one, whatever its health (a dead
	// one is not a phantom besides); an ended one is not.
	register(t, s, "team", "t", strp("active"), onHost("h1"))
	register(t, s, "team", "t-closed", strp("active"), onHost("h1"))
	if _, _, err := move(s, "team", "t-closed", "closed", true, t0); err != nil {
		t.Fatal(err)
	}
	register(t, s, "play", "p", strp("planned"), onHost(""))
	observe("play", "p", state.HealthProcessDead)
	register(t, s, "play", "p-other", strp("planned"), onHost("h2"))

	f := store.Filter{HostID: "h1", AlsoHostless: true, OpenOnly: true, PhantomBefore: cut, Reconciled: []string{"play", "show", "team"}}
	want := "play/p session/dead session/hostless session/orphan team/t "
	for _, tc := range []struct {
		name string
		f    store.Filter
		want string
	}{
		{"the candidates", f, want},
		{"this host's alone", store.Filter{HostID: "h1", OpenOnly: true, PhantomBefore: cut, Reconciled: f.Reconciled}, "session/dead session/orphan team/t "},
		{"phantoms alone", store.Filter{HostID: "h1", OpenOnly: true, PhantomBefore: cut}, "session/dead session/orphan "},
		{"open whatever else the filter says", store.Filter{HostID: "h1", EndedSince: t0, PhantomBefore: cut}, "session/dead session/orphan "},
		{"a cut before the last activity", store.Filter{HostID: "h1", OpenOnly: true, PhantomBefore: t0.Add(-time.Second)}, ""},
		{"a cut at it", store.Filter{HostID: "h1", OpenOnly: true, PhantomBefore: t0}, "session/dead session/orphan "},
	} {
		list, err := s.List(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := ""
		for _, e := range list {
			got += e.Type + "/" + e.ID + " "
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, limit := range []int{1, 2, 4} {
		got, pf := "", f
		pf.Limit = limit
		for pages := 0; ; pages++ {
			if pages > 6 {
				t.Fatalf("limit %d: more than 6 pages (%q so far)", limit, got)
			}
			list, err := s.List(ctx, pf)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range list {
				got += e.Type + "/" + e.ID + " "
			}
			if len(list) < limit {
				break
			}
			pf.After = store.KeyOf(&list[len(list)-1])
		}
		if got != want {
			t.Errorf("limit %d: paged %q, want %q", limit, got, want)
		}
	}
}

// testRevisionsOnly: Filter.RevisionsOnly reads the keys and revisions of
// what the filter selects and nothing else, and a write of a row moves its
// revision, a write of another row does not.
func testRevisionsOnly(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	for _, id := range []string{"a", "b", "c"} {
		register(t, s, "session", id, strp("running"), func(e *store.Entity) { e.HostID, e.Label = "h1", "label" })
	}
	revs := func() map[string]int64 {
		t.Helper()
		list, err := s.List(ctx, store.Filter{HostID: "h1", OpenOnly: true, RevisionsOnly: true, Limit: 2, After: store.Key{Type: "session", ID: "a"}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, e := range list {
			if e.Type != "session" || e.Label != "" || e.Lifecycle != nil || e.HostID != "" || e.Revision == 0 {
				t.Errorf("a revisions-only row holds more or less than its key and revision: %+v", e)
			}
			out[e.ID] = e.Revision
		}
		return out
	}
	before := revs()
	full, _ := s.Get(ctx, "session", "b")
	if len(before) != 2 || before["b"] != full.Revision {
		t.Fatalf("revisions %v, b's row at %d", before, full.Revision)
	}
	if err := s.RecordHeartbeat(ctx, "session", "b", t0.Add(time.Second), ""); err != nil {
		t.Fatal(err)
	}
	after := revs()
	if after["b"] == before["b"] || after["c"] != before["c"] {
		t.Errorf("after a write of b: revisions %v, before %v", after, before)
	}
}

func testPages(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	register(t, s, "session", "s1", strp("pending"), nil)
	register(t, s, "session", "other", strp("pending"), nil)
	for i, to := range []string{"running", "paused", "running", "paused", "running"} {
		if _, _, err := move(s, "session", "s1", to, false, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := move(s, "session", "other", to, false, t0); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := s.Transitions(ctx, "session", "s1")
	if len(all) != 6 {
		t.Fatalf("%d rows, want 6", len(all))
	}
	latest, total, err := s.LatestTransitions(ctx, "session", "s1", 2)
	if err != nil || total != 6 || len(latest) != 2 || latest[0].Seq != all[4].Seq || latest[1].Seq != all[5].Seq {
		t.Errorf("latest 2: %+v total %d %v", latest, total, err)
	}
	var paged []int64
	after := int64(0)
	for {
		page, err := s.TransitionsAfter(ctx, "session", "s1", after, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			paged = append(paged, r.Seq)
		}
		if len(page) < 4 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if len(paged) != 6 {
		t.Errorf("pages read %v", paged)
	}
	for i := range paged {
		if paged[i] != all[i].Seq {
			t.Errorf("page row %d seq %d, want %d", i, paged[i], all[i].Seq)
		}
	}
	if none, err := s.TransitionsAfter(ctx, "session", "nope", 0, 10); err != nil || none == nil || len(none) != 0 {
		t.Errorf("no rows: %v %v (want an empty, non-nil page)", none, err)
	}
}

func testDismissals(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	register(t, s, "session", "s1", strp("running"), nil)
	d := store.Dismissal{Fingerprint: "session:s1:x", EntityType: "session", EntityID: "s1", ReasonCode: "x",
		StatusAtDismissal: "running", DismissedAt: t0, ClearOnStatusChange: true, Occurrence: t0.Add(-time.Minute)}
	if err := s.UpsertDismissal(ctx, d); err != nil {
		t.Fatal(err)
	}
	first := (mustDismissals(t, s))[d.Fingerprint]
	d.SnoozedUntil, d.DismissedAt = t0.Add(time.Hour), t0.Add(time.Minute)
	if err := s.UpsertDismissal(ctx, d); err != nil {
		t.Fatal(err)
	}
	second := (mustDismissals(t, s))[d.Fingerprint]
	if first.ID == "" || second.ID != first.ID || !second.CreatedAt.Equal(t0) || !second.SnoozedUntil.Equal(t0.Add(time.Hour)) ||
		!second.Occurrence.Equal(t0.Add(-time.Minute)) || second.DismissedBy != "operator" || !second.ClearOnStatusChange {
		t.Errorf("first %+v\nsecond %+v", first, second)
	}
	if err := s.UpsertDismissal(ctx, store.Dismissal{Fingerprint: "f"}); err == nil {
		t.Error("an incomplete dismissal was accepted")
	}
	// Gone when the snooze ends, or the status it was dismissed at.
	if n, err := s.VacuumDismissals(ctx, t0.Add(30*time.Minute)); err != nil || n != 0 {
		t.Errorf("vacuum before the snooze ends: %d %v", n, err)
	}
	if n, err := s.VacuumDismissals(ctx, t0.Add(2*time.Hour)); err != nil || n != 1 {
		t.Errorf("vacuum after the snooze ends: %d %v", n, err)
	}
	d.SnoozedUntil = time.Time{}
	if err := s.UpsertDismissal(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, _, err := move(s, "session", "s1", "completed", true, t0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.VacuumDismissals(ctx, t0); err != nil || n != 1 || len(mustDismissals(t, s)) != 0 {
		t.Errorf("vacuum after a status change: %d %v", n, err)
	}
}

// testDismissalBatch: UpsertDismissals writes every dismissal and one
// triage log row each under one batch id, with the actor; a batch with
// one incomplete dismissal writes nothing at all; a single UpsertDismissal
// is logged too, under a batch of its own.
func testDismissalBatch(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	var ds []store.Dismissal
	for _, id := range []string{"s1", "s2", "s3"} {
		register(t, s, "session", id, strp("running"), nil)
		ds = append(ds, store.Dismissal{Fingerprint: "session:" + id + ":run.health.stalled", EntityType: "session", EntityID: id,
			ReasonCode: "run.health.stalled", StatusAtDismissal: "running", SnoozedUntil: t0.Add(4 * time.Hour),
			DismissedAt: t0, DismissedBy: "operator", ClearOnStatusChange: true, Occurrence: t0.Add(-time.Minute)})
	}

	bad := append(append([]store.Dismissal{}, ds[:2]...), store.Dismissal{Fingerprint: "session:s3:x"})
	if _, err := s.UpsertDismissals(ctx, bad); err == nil {
		t.Fatal("a batch with an incomplete dismissal was accepted")
	}
	if n := len(mustDismissals(t, s)); n != 0 {
		t.Fatalf("a refused batch left %d dismissals", n)
	}
	if log := mustTriage(t, s, 0); len(log) != 0 {
		t.Fatalf("a refused batch left %d triage rows", len(log))
	}
	if _, err := s.UpsertDismissals(ctx, nil); err == nil {
		t.Error("an empty batch was accepted")
	}

	batch, err := s.UpsertDismissals(ctx, ds)
	if err != nil || batch == "" {
		t.Fatalf("batch %q: %v", batch, err)
	}
	got := mustDismissals(t, s)
	for _, d := range ds {
		if g, ok := got[d.Fingerprint]; !ok || !g.SnoozedUntil.Equal(d.SnoozedUntil) || g.DismissedBy != "operator" {
			t.Errorf("%s: %+v (found %v)", d.Fingerprint, g, ok)
		}
	}
	log := mustTriage(t, s, 0)
	if len(log) != len(ds) {
		t.Fatalf("triage log %d rows, want %d: %+v", len(log), len(ds), log)
	}
	for i, e := range log {
		if e.Batch != batch || e.Action != store.TriageSnooze || e.Fingerprint != ds[i].Fingerprint || e.By != "operator" ||
			!e.At.Equal(t0) || !e.SnoozedUntil.Equal(t0.Add(4*time.Hour)) || e.EntityID != ds[i].EntityID || e.ReasonCode != "run.health.stalled" {
			t.Errorf("row %d: %+v", i, e)
		}
		if i > 0 && e.Seq <= log[i-1].Seq {
			t.Errorf("row %d: seq %d after %d", i, e.Seq, log[i-1].Seq)
		}
	}

	// A dismissal of one of them: its own batch, action dismiss; the log
	// keeps the snooze before it.
	d := ds[0]
	d.SnoozedUntil, d.DismissedAt = time.Time{}, t0.Add(time.Minute)
	if err := s.UpsertDismissal(ctx, d); err != nil {
		t.Fatal(err)
	}
	more := mustTriage(t, s, log[len(log)-1].Seq)
	if len(more) != 1 || more[0].Action != store.TriageDismiss || more[0].Batch == batch || !more[0].SnoozedUntil.IsZero() {
		t.Errorf("after a dismissal: %+v", more)
	}
	if page, err := s.TriageLog(ctx, 0, 2); err != nil || len(page) != 2 {
		t.Errorf("a page of 2: %d rows, %v", len(page), err)
	}
}

// testTriagePagesAndVacuum: TriageLogBefore pages the log newest first
// (before 0 is the newest); VacuumTriage drops the rows written before
// its cut, keeps one written at it and after, and leaves the dismissals
// alone (they have their own vacuum).
func testTriagePagesAndVacuum(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	if page, err := s.TriageLogBefore(ctx, 0, 10); err != nil || len(page) != 0 {
		t.Fatalf("an empty log: %+v, %v", page, err)
	}
	if n, err := s.VacuumTriage(ctx, t0); err != nil || n != 0 {
		t.Fatalf("vacuum of an empty log: %d, %v", n, err)
	}
	// Four acts an hour apart, on two items: at t0, t0+1h, t0+2h, t0+3h.
	for i := range 4 {
		id := []string{"s1", "s2"}[i%2]
		if i < 2 {
			register(t, s, "session", id, strp("running"), nil)
		}
		d := store.Dismissal{Fingerprint: "session:" + id + ":run.health.stalled", EntityType: "session", EntityID: id,
			ReasonCode: "run.health.stalled", StatusAtDismissal: "running", SnoozedUntil: t0.Add(30 * time.Hour),
			DismissedAt: t0.Add(time.Duration(i) * time.Hour), DismissedBy: "operator", ClearOnStatusChange: true}
		if err := s.UpsertDismissal(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	all := mustTriage(t, s, 0)
	if len(all) != 4 {
		t.Fatalf("triage log %d rows, want 4", len(all))
	}

	for _, tc := range []struct {
		name   string
		before int64
		limit  int
		want   []int // indexes into all, in the order wanted
	}{
		{"the newest page", 0, 2, []int{3, 2}},
		{"the next page", all[2].Seq, 2, []int{1, 0}},
		{"past the oldest", all[0].Seq, 2, nil},
		{"one page of everything", 0, 10, []int{3, 2, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := s.TriageLogBefore(ctx, tc.before, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []int64
			for _, e := range page {
				got = append(got, e.Seq)
			}
			for _, i := range tc.want {
				want = append(want, all[i].Seq)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("seqs %v, want %v", got, want)
			}
		})
	}

	// The cut at t0+2h: the acts at t0 and t0+1h go, the one at the cut
	// and the one after it stay.
	if n, err := s.VacuumTriage(ctx, t0.Add(2*time.Hour)); err != nil || n != 2 {
		t.Errorf("vacuum: %d rows, %v; want 2", n, err)
	}
	left := mustTriage(t, s, 0)
	if len(left) != 2 || left[0].Seq != all[2].Seq || left[1].Seq != all[3].Seq {
		t.Errorf("after the vacuum: %+v, want the rows of seq %d and %d", left, all[2].Seq, all[3].Seq)
	}
	if n, err := s.VacuumTriage(ctx, t0.Add(2*time.Hour)); err != nil || n != 0 {
		t.Errorf("a second vacuum at the same cut: %d, %v; want 0", n, err)
	}
	if n := len(mustDismissals(t, s)); n != 2 {
		t.Errorf("the triage vacuum touched the dismissals: %d left, want 2", n)
	}
}

func mustTriage(t *testing.T, s store.Backend, after int64) []store.TriageEntry {
	t.Helper()
	log, err := s.TriageLog(context.Background(), after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// testVacuumEscalated: a clear_on_status_change row whose entity changed
// status is kept while the entity still holds the row's finding in the
// occurrence it covers (the end escalated it, and the acknowledgement
// carries over: attention.Carries); any other status-changed row goes.
func testVacuumEscalated(t *testing.T, h Harness) {
	ctx := context.Background()
	onset := t0.Add(-time.Minute)
	for _, tc := range []struct {
		name       string
		code       state.ReasonCode
		occurrence time.Time
		kept       bool
	}{
		{"the finding's occurrence, still held", state.RunHealthProcessDead, onset, true},
		{"an earlier occurrence of the finding", state.RunHealthProcessDead, onset.Add(-time.Hour), false},
		{"a finding the entity does not hold", state.RunHealthStalled, onset, false},
		{"a row from before occurrences", state.RunHealthProcessDead, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, h, h.New(t))
			register(t, s, "session", "s1", strp("running"), nil)
			e, err := s.Get(ctx, "session", "s1")
			if err != nil {
				t.Fatal(err)
			}
			dead := state.Observed(state.RunHealthProcessDead, "process dead")
			dead.FirstSeen.Time = onset
			if _, err := s.RecordObservation(ctx, "session", "s1", store.Observation{Health: state.HealthProcessDead, Delivery: state.DeliveryUnknown,
				HealthSince: onset, DeadSince: onset, Reasons: []state.StateReason{dead}, SeenSeq: e.LastSeq, At: onset}); err != nil {
				t.Fatal(err)
			}
			fp := "session:s1:" + string(tc.code)
			if err := s.UpsertDismissal(ctx, store.Dismissal{Fingerprint: fp, EntityType: "session", EntityID: "s1", ReasonCode: string(tc.code),
				StatusAtDismissal: "running", DismissedAt: t0, ClearOnStatusChange: true, Occurrence: tc.occurrence}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := move(s, "session", "s1", "aborted", true, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, "session", "s1"); err != nil || len(got.Reasons) != 1 || !got.Reasons[0].FirstSeen.Equal(onset) {
				t.Fatalf("the end did not keep the dated finding: %+v %v", got.Reasons, err)
			}
			n, err := s.VacuumDismissals(ctx, t0.Add(2*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := mustDismissals(t, s)[fp]; ok != tc.kept || (n == 0) != tc.kept {
				t.Errorf("after the status change: kept %v (want %v), %d vacuumed", ok, tc.kept, n)
			}
		})
	}
}

func mustDismissals(t *testing.T, s store.Backend) map[string]store.Dismissal {
	t.Helper()
	ds, err := s.Dismissals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func testDaemons(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	if err := s.MarkDaemon(ctx, "h1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Never moved back.
	if err := s.MarkDaemon(ctx, "h1", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDaemon(ctx, "h2", t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.DaemonHosts(ctx, t0.Add(30*time.Second))
	if err != nil || len(got) != 1 || !got["h1"] {
		t.Errorf("daemon hosts %v %v", got, err)
	}

	// A start records the machine's hostname beside the presence; the
	// ticks after it keep the name, a later start replaces it, and the
	// start's presence never moves seen_at back either.
	if names, err := s.HostNames(ctx); err != nil || len(names) != 0 {
		t.Errorf("hostnames before any start: %v %v, want none", names, err)
	}
	if err := s.MarkDaemonStart(ctx, "h2", "build-7", t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDaemon(ctx, "h2", t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDaemonStart(ctx, "h3", "db-1", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDaemonStart(ctx, "h3", "db-1.example.org", t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	names, err := s.HostNames(ctx)
	if err != nil || len(names) != 2 || names["h2"] != "build-7" || names["h3"] != "db-1.example.org" {
		t.Errorf("hostnames %v %v, want h2 build-7 and h3 db-1.example.org (h1 never named)", names, err)
	}
	seen, err := s.DaemonsSeen(ctx)
	if err != nil || !seen["h2"].Equal(t0.Add(3*time.Minute)) || !seen["h3"].Equal(t0) || !seen["h1"].Equal(t0.Add(time.Minute)) {
		t.Errorf("daemons seen %v %v, want h1 at +1m, h2 at +3m, h3 at t0", seen, err)
	}

	// Each daemon's settings: recorded at its start and reload, the last
	// one kept, with where they came from; presence unmoved.
	if got, err := s.Settings(ctx); err != nil || len(got) != 0 {
		t.Errorf("settings before any were recorded: %v %v", got, err)
	}
	first := store.DaemonSettings{YAML: "thresholds:\n  idle_after: 5m\n", Source: "/etc/watchdog/config.yaml", At: t0.Add(4 * time.Minute)}
	reload := store.DaemonSettings{YAML: "thresholds:\n  idle_after: 7m\n", Source: "/etc/watchdog/config.yaml", At: t0.Add(5 * time.Minute)}
	for _, ds := range []store.DaemonSettings{first, reload} {
		if err := s.RecordSettings(ctx, "h2", ds); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordSettings(ctx, "h4", store.DaemonSettings{YAML: "thresholds: {}\n", At: t0}); err != nil {
		t.Fatal(err)
	}
	recorded, err := s.Settings(ctx)
	if got := recorded; err != nil || len(got) != 2 || got["h2"].YAML != reload.YAML || got["h2"].Source != reload.Source || !got["h2"].At.Equal(reload.At) || got["h4"].Source != "" {
		t.Errorf("settings %+v %v, want h2's reload and h4's defaults", recorded, err)
	}
	if seen, err := s.DaemonsSeen(ctx); err != nil || !seen["h2"].Equal(t0.Add(3*time.Minute)) {
		t.Errorf("recording settings moved h2's presence: %v %v", seen["h2"], err)
	}
}

// testFeed reads the feed on one handle while another writes: every
// entity at its latest content in revision order (the writes are one
// after another, so the feed's order is the revisions'), every audit row
// once.
func testFeed(t *testing.T, h Harness) {
	ctx := context.Background()
	dsn := h.New(t)
	reader, writer := open(t, h, dsn), open(t, h, dsn)
	head, err := reader.FeedHead(ctx)
	if err != nil || head != (store.Cursor{}) {
		t.Fatalf("head of an empty store: %+v %v", head, err)
	}
	for i := range 5 {
		register(t, writer, "session", fmt.Sprintf("s-%d", i), strp("running"), nil)
	}
	if _, _, err := move(writer, "session", "s-1", "completed", true, t0); err != nil {
		t.Fatal(err)
	}
	if err := writer.RecordHeartbeat(ctx, "session", "s-3", t0, "half"); err != nil {
		t.Fatal(err)
	}
	var (
		c     store.Cursor
		seen  = map[string]store.Entity{}
		audit []int64
	)
	for {
		b, err := reader.ChangesSince(ctx, c, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range b.Entities {
			if e.Revision <= c.Revision {
				t.Errorf("entity %s at revision %d, not after %d", e.ID, e.Revision, c.Revision)
			}
			c.Revision = e.Revision
			seen[e.ID] = e
		}
		for _, r := range b.Transitions {
			audit = append(audit, r.Seq)
		}
		c = b.Next
		if !b.More {
			break
		}
	}
	if len(seen) != 5 || seen["s-1"].LifecycleOr("") != "completed" || seen["s-3"].HeartbeatProgress != "half" {
		t.Errorf("feed saw %d entities: %+v", len(seen), seen)
	}
	if len(audit) != 6 {
		t.Errorf("feed saw audit rows %v, want 6", audit)
	}
	head, err = reader.FeedHead(ctx)
	if err != nil || head != c {
		t.Errorf("head %+v after reading to %+v (%v)", head, c, err)
	}
	if b, err := reader.ChangesSince(ctx, head, 10); err != nil || len(b.Entities)+len(b.Transitions) != 0 || b.More {
		t.Errorf("read from the head: %+v %v", b, err)
	}
}

// testFeedByHost: ChangesFor reads the entities of the hosts it is asked
// for, every one of them at its latest content, and their audit rows
// (each stamped with its entity's host by the write path), or with
// EntitiesOnly no audit rows; "" is the host-less entities.
func testFeedByHost(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	for _, host := range []string{"a", "b", "c", ""} {
		for i := range 3 {
			register(t, s, "session", fmt.Sprintf("%s-%d", host, i), strp("running"), func(e *store.Entity) { e.HostID = host })
		}
	}
	if _, _, err := move(s, "session", "b-1", "completed", true, t0); err != nil {
		t.Fatal(err)
	}
	// The feed ends with a row of a, which "all but a and c" skips.
	if _, _, err := move(s, "session", "a-2", "completed", true, t0); err != nil {
		t.Fatal(err)
	}
	read := func(f store.FeedFilter) (ids []string, audit int, c store.Cursor) {
		t.Helper()
		for {
			b, err := s.ChangesFor(ctx, c, f, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range b.Entities {
				ids = append(ids, e.ID)
				if e.ID == "b-1" && e.LifecycleOr("") != "completed" {
					t.Errorf("b-1 read as %s", e.LifecycleOr(""))
				}
			}
			audit += len(b.Transitions)
			for _, r := range b.Transitions {
				// The write path stamped each row with its entity's
				// host, and the read kept the selected hosts' only.
				if host, _, _ := strings.Cut(r.EntityID, "-"); r.HostID != host || !f.Hosts.Has(r.HostID) {
					t.Errorf("audit row %d of %s has host %q (selected: %+v)", r.Seq, r.EntityID, r.HostID, f.Hosts)
				}
			}
			c = b.Next
			if !b.More {
				break
			}
		}
		sort.Strings(ids)
		return ids, audit, c
	}
	head, err := s.FeedHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    store.FeedFilter
		want string
		// audit is how many audit rows the read carries: the selected
		// hosts' registrations and b-1's and a-2's transitions, or none.
		audit int
	}{
		{"every host", store.FeedFilter{Hosts: store.AllHosts()}, "-0 -1 -2 a-0 a-1 a-2 b-0 b-1 b-2 c-0 c-1 c-2", 14},
		{"one host", store.FeedFilter{Hosts: store.Only("b")}, "b-0 b-1 b-2", 4},
		{"host-less and one", store.FeedFilter{Hosts: store.Only("", "a")}, "-0 -1 -2 a-0 a-1 a-2", 7},
		{"all but two", store.FeedFilter{Hosts: store.AllBut("a", "c")}, "-0 -1 -2 b-0 b-1 b-2", 7},
		{"entities only", store.FeedFilter{Hosts: store.Only("c"), EntitiesOnly: true}, "c-0 c-1 c-2", 0},
		{"no host", store.FeedFilter{Hosts: store.Only()}, "", 0},
	} {
		ids, audit, c := read(tc.f)
		if got := strings.Join(ids, " "); got != tc.want || audit != tc.audit {
			t.Errorf("%s: read %q and %d audit rows, want %q and %d", tc.name, got, audit, tc.want, tc.audit)
		}
		// A read of every host but some that reached the end goes on
		// from the head: the others' rows are not scanned again.
		if tc.f.Hosts.All && c != head {
			t.Errorf("%s: read to %+v, want the head %+v", tc.name, c, head)
		}
	}
}

// testDataVersion: another handle's commit moves the version, and so does
// the handle's own; a reader that reads the version before the rows sees
// everything by the time the version stops moving. A reader whose wake-ups
// are narrowed to a host (PostgreSQL's WakeFor) still sees its version
// move on another host's commit: read your writes across the fleet.
func testDataVersion(t *testing.T, h Harness) {
	ctx := context.Background()
	dsn := h.New(t)
	reader, writer := open(t, h, dsn), open(t, h, dsn)
	if w, ok := reader.(interface{ WakeFor(store.Hosts) }); ok {
		w.WakeFor(store.Only("elsewhere"))
	}
	register(t, writer, "session", "s0", strp("running"), nil)
	v0, err := reader.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	register(t, writer, "session", "s1", strp("running"), nil)
	testenv.Eventually(t, "the version moves on another handle's commit", 30*time.Second, func() (bool, string) {
		v, err := reader.DataVersion(ctx)
		return err == nil && v != v0, fmt.Sprintf("version %d (was %d), %v", v, v0, err)
	})
	v1, _ := reader.DataVersion(ctx)
	if err := writer.UpsertDismissal(ctx, store.Dismissal{Fingerprint: "session:s1:x", EntityType: "session", EntityID: "s1", ReasonCode: "x",
		StatusAtDismissal: "running", DismissedAt: t0}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the version moves on a dismissal", 30*time.Second, func() (bool, string) {
		v, err := reader.DataVersion(ctx)
		return err == nil && v != v1, fmt.Sprintf("version %d (was %d), %v", v, v1, err)
	})
	v2, _ := reader.DataVersion(ctx)
	register(t, reader, "session", "s2", strp("running"), nil)
	if v, err := reader.DataVersion(ctx); err != nil || v == v2 {
		t.Errorf("the handle's own commit did not move its version at once: %d %v", v, err)
	}
}

// testFeedConcurrent: many writers on several handles commit side by side
// (registrations, transitions, heartbeats, one entity every writer
// heartbeats) while a reader follows the feed the way the live view does
// (DataVersion first, then every batch from its cursor); where the backend
// allows it, a write transaction opened before the writers start stays
// open until they have all committed. The reader must end with every
// audit row exactly once, every entity at its stored revision, each
// entity's revisions and audit seqs rising, and the held write's rows.
func testFeedConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	dsn := h.New(t)
	const handles, lanes, perLane = 3, 3, 25
	writers := make([]store.Backend, handles)
	for i := range writers {
		writers[i] = open(t, h, dsn)
	}
	reader := open(t, h, dsn)
	register(t, writers[0], "session", "hot", strp("running"), nil)
	register(t, writers[0], "session", "held", strp("running"), nil)
	var commitHeld func()
	if h.HoldWrite != nil {
		commitHeld = h.HoldWrite(t, dsn, "session", "held", "held open")
	}

	// The reader: its own goroutine until the test ends, its findings
	// under mu.
	var (
		mu       sync.Mutex
		seenSeq  = map[int64]int{}
		lastSeq  = map[string]int64{} // entity → last audit seq seen
		entities = map[string]store.Entity{}
		problems []string
		reads    int
	)
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		var (
			c       store.Cursor
			version int64 = -1
		)
		for {
			select {
			case <-stop:
				return
			default:
			}
			v, err := reader.DataVersion(ctx)
			if err != nil {
				mu.Lock()
				problems = append(problems, "data version: "+err.Error())
				mu.Unlock()
				return
			}
			if v == version {
				time.Sleep(time.Millisecond)
				continue
			}
			version = v
			for {
				b, err := reader.ChangesSince(ctx, c, 50)
				if err != nil {
					mu.Lock()
					problems = append(problems, "changes: "+err.Error())
					mu.Unlock()
					return
				}
				mu.Lock()
				reads++
				for _, e := range b.Entities {
					if was, ok := entities[e.ID]; ok && e.Revision <= was.Revision {
						problems = append(problems, fmt.Sprintf("%s at revision %d after %d", e.ID, e.Revision, was.Revision))
					}
					entities[e.ID] = e
				}
				for _, r := range b.Transitions {
					seenSeq[r.Seq]++
					if r.Seq <= lastSeq[r.EntityID] {
						problems = append(problems, fmt.Sprintf("%s: audit seq %d after %d", r.EntityID, r.Seq, lastSeq[r.EntityID]))
					}
					lastSeq[r.EntityID] = r.Seq
				}
				mu.Unlock()
				c = b.Next
				if !b.More {
					break
				}
			}
		}
	}()
	defer func() {
		close(stop)
		<-readerDone
	}()

	var wg sync.WaitGroup
	for hi, w := range writers {
		for lane := range lanes {
			wg.Go(func() {
				for i := range perLane {
					id := fmt.Sprintf("w%d-%d-%d", hi, lane, i)
					if _, err := w.Register(ctx, store.Entity{Type: "session", ID: id, Lifecycle: strp("pending")}, "orchestrator", t0); err != nil {
						t.Errorf("register %s: %v", id, err)
						return
					}
					for _, to := range []string{"running", "completed"} {
						if _, _, err := move(w, "session", id, to, to == "completed", t0); err != nil {
							t.Errorf("move %s to %s: %v", id, to, err)
							return
						}
					}
					if err := w.RecordHeartbeat(ctx, "session", "hot", t0, id); err != nil {
						t.Errorf("heartbeat: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if commitHeld != nil {
		commitHeld()
	}

	// What the store holds now is what the reader must come to.
	list, err := writers[0].List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, e := range list {
		rows, err := writers[0].Transitions(ctx, e.Type, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want = append(want, r.Seq)
		}
	}
	if n := 2 + handles*lanes*perLane; len(list) != n {
		t.Fatalf("%d entities stored, want %d", len(list), n)
	}
	testenv.Eventually(t, "the reader to see every committed change", 2*time.Minute, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) > 0 {
			return true, ""
		}
		missing := 0
		for _, seq := range want {
			if seenSeq[seq] == 0 {
				missing++
			}
		}
		stale := 0
		for _, e := range list {
			if entities[e.ID].Revision != e.Revision {
				stale++
			}
		}
		return missing == 0 && stale == 0, fmt.Sprintf("%d of %d audit rows not seen, %d of %d entities not at their stored revision, after %d reads",
			missing, len(want), stale, len(list), reads)
	})
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	for seq, n := range seenSeq {
		if n != 1 {
			t.Errorf("audit row %d seen %d times", seq, n)
		}
	}
	if len(seenSeq) != len(want) {
		t.Errorf("the reader saw %d audit rows, the store holds %d", len(seenSeq), len(want))
	}
	if commitHeld != nil && entities["held"].HeartbeatProgress != "held open" {
		t.Errorf("the write held open while the others committed was missed: %+v", entities["held"])
	}
}

const raceEntities = 1000

// testRace: two handles race to end the same 1,000 running sessions
// through the write path, one with completed, the other with aborted.
// Every entity ends exactly once and the loser sees a conflict.
func testRace(t *testing.T, h Harness) {
	ctx := context.Background()
	dsn := h.New(t)
	st1, st2 := open(t, h, dsn), open(t, h, dsn)
	setup := &transitions.Writer{Store: st1, Now: time.Now}
	for i := range raceEntities {
		running := "running"
		if _, err := setup.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: fmt.Sprintf("s%04d", i), Lifecycle: &running},
			Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	dead := state.Observed(state.SystemHealthProcessDeadNoTerminal, "test")
	writers := []struct {
		w      *transitions.Writer
		to     string
		reason *state.StateReason
		actor  string
	}{
		{&transitions.Writer{Store: st1, Now: time.Now}, "completed", nil, transitions.ActorOrchestrator},
		{&transitions.Writer{Store: st2, Now: time.Now}, "aborted", &dead, transitions.ActorReaper},
	}
	won := make([]int, len(writers))
	var wg sync.WaitGroup
	for wi, wr := range writers {
		// Several goroutines per writer, as a daemon's API serves them.
		const lanes = 4
		var mu sync.Mutex
		for lane := range lanes {
			wg.Go(func() {
				for i := lane; i < raceEntities; i += lanes {
					n := i
					if wi == 1 {
						n = raceEntities - 1 - i // meet in the middle
					}
					_, err := wr.w.Transition(ctx, transitions.Request{Type: "session", ID: fmt.Sprintf("s%04d", n), To: wr.to,
						ExpectFrom: "running", Reason: wr.reason, Actor: wr.actor})
					switch {
					case err == nil:
						mu.Lock()
						won[wi]++
						mu.Unlock()
					case errors.Is(err, transitions.ErrConflict):
					default:
						t.Errorf("writer %d entity %d: unexpected %v", wi, n, err)
					}
				}
			})
		}
	}
	wg.Wait()
	if won[0]+won[1] != raceEntities {
		t.Errorf("wins %d + %d != %d", won[0], won[1], raceEntities)
	}
	list, err := st1.List(ctx, store.Filter{Type: "session"})
	if err != nil || len(list) != raceEntities {
		t.Fatalf("%d entities, %v", len(list), err)
	}
	for _, e := range list {
		rows, err := st1.Transitions(ctx, e.Type, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		terminals := 0
		for _, r := range rows {
			if r.From != nil && *r.From == "running" {
				terminals++
			}
		}
		if terminals != 1 || !e.Terminal || rows[len(rows)-1].To != e.LifecycleOr("") || rows[len(rows)-1].Seq != e.LastSeq {
			t.Errorf("%s: %d terminal rows, lifecycle %s, audit %+v", e.ID, terminals, e.LifecycleOr(""), rows)
		}
	}
}

// HelperMain makes a test binary double as the suite's crash writer: call
// it first thing in the TestMain of a package that runs the suite, with
// the backend's Open. In a normal run it returns at once.
func HelperMain(openStore func(ctx context.Context, dsn string) (store.Backend, error)) {
	if dsn := os.Getenv(crashEnv); dsn != "" {
		crashWriter(dsn, openStore)
		os.Exit(0)
	}
}

// testOwners: an entity keeps its owner and proven uid, an audit row its
// principal, through both drivers; an upsert guarded by another owner
// changes nothing and says ErrNotOwner (issue 36).
func testOwners(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h, h.New(t))
	running := "running"
	e := store.Entity{Type: "session", ID: "o", Lifecycle: &running, Label: "mine",
		Owner: "uid:1000 (alice)", OwnerUID: 1000, HasOwnerUID: true}
	if _, err := s.Register(ctx, e, "orchestrator", time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "session", "o")
	if err != nil || got.Owner != e.Owner || got.OwnerUID != 1000 || !got.HasOwnerUID {
		t.Fatalf("owner read back: %q %d %t (%v)", got.Owner, got.OwnerUID, got.HasOwnerUID, err)
	}
	rows, _ := s.Transitions(ctx, "session", "o")
	if len(rows) != 1 || rows[0].Principal != e.Owner {
		t.Fatalf("registration row %+v, want principal %q", rows, e.Owner)
	}
	// bob's guarded upsert of alice's entity: refused, nothing changed.
	bob := store.Entity{Type: "session", ID: "o", Label: "bob's now", Owner: "uid:1001 (bob)", OwnerUID: 1001, HasOwnerUID: true, OwnerGuard: true}
	if _, err := s.Register(ctx, bob, "orchestrator", time.Now()); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("another owner's guarded upsert: %v, want ErrNotOwner", err)
	}
	if got, _ := s.Get(ctx, "session", "o"); got.Label != "mine" || got.OwnerUID != 1000 {
		t.Errorf("after the refused upsert: label %q owner %d", got.Label, got.OwnerUID)
	}
	// alice's own guarded upsert applies.
	mine := store.Entity{Type: "session", ID: "o", Label: "renamed", OwnerUID: 1000, HasOwnerUID: true, OwnerGuard: true}
	if _, err := s.Register(ctx, mine, "orchestrator", time.Now()); err != nil {
		t.Errorf("the owner's guarded upsert: %v", err)
	}
	if got, _ := s.Get(ctx, "session", "o"); got.Label != "renamed" || got.Owner != e.Owner {
		t.Errorf("after the owner's upsert: label %q owner %q", got.Label, got.Owner)
	}
	_, _, err = s.ApplyTransition(ctx, "session", "o", func(cur store.Entity) (store.Change, error) {
		return store.Change{To: "completed", Terminal: true, Actor: "reaper", Principal: "reaper@host-13", At: time.Now()}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = s.Transitions(ctx, "session", "o")
	if last := rows[len(rows)-1]; last.Principal != "reaper@host-13" {
		t.Errorf("the transition's row names %q, want reaper@host-13", last.Principal)
	}
}
