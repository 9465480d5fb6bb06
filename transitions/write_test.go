package transitions

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
)

func openTestStore(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "watchdog.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

type countingObserver struct {
	mu       sync.Mutex
	applied  map[string]int
	rejected map[string]int
}

func (o *countingObserver) Transitioned(typ, from, to, actor string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.applied[typ+":"+from+">"+to+":"+actor]++
}

func (o *countingObserver) Rejected(typ, cause string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected[typ+":"+cause]++
}

func newTestWriter(t testing.TB) (*Writer, *sqlite.Store, *testenv.Clock, *countingObserver) {
	st, _ := openTestStore(t)
	clock := testenv.NewClock(time.Unix(1_800_000_000, 0))
	obs := &countingObserver{applied: map[string]int{}, rejected: map[string]int{}}
	return &Writer{Store: st, Now: clock.Now, Observer: obs}, st, clock, obs
}

func mustRegister(t testing.TB, w *Writer, typ, id, lifecycle string) {
	t.Helper()
	e := store.Entity{Type: typ, ID: id}
	if lifecycle != "" {
		e.Lifecycle = &lifecycle
	}
	if _, err := w.Register(context.Background(), Registration{Entity: e, Actor: ActorOrchestrator}); err != nil {
		t.Fatalf("register %s/%s: %v", typ, id, err)
	}
}

func reason(code state.ReasonCode) *state.StateReason {
	r := state.Observed(code, "test")
	return &r
}

// snapshot is everything a rejected transition must leave untouched.
type snapshot struct {
	entity store.Entity
	rows   []store.AuditRow
}

func take(t *testing.T, st *sqlite.Store, typ, id string) snapshot {
	t.Helper()
	e, err := st.Get(context.Background(), typ, id)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.Transitions(context.Background(), typ, id)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot{e, rows}
}

func TestTransitionRejections(t *testing.T) {
	w, st, _, obs := newTestWriter(t)
	ctx := context.Background()
	mustRegister(t, w, "session", "s1", "running")
	mustRegister(t, w, "workflow", "wf", "running")
	mustRegister(t, w, "agent", "ag", "idle")
	if _, err := w.Store.Register(ctx, store.Entity{Type: "session", ID: "legacy"}, ActorOrchestrator, unixAt(1)); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		req   Request
		want  error
		cause string
	}{
		{"agent without a trigger", Request{Type: "agent", ID: "ag", To: "busy", Actor: ActorOrchestrator}, ErrInvalidInput, CauseInvalidInput},
		{"unknown type", Request{Type: "widget", ID: "s1", To: "failed", Actor: ActorAdmin}, ErrUnknownType, CauseUnknownType},
		{"unknown state", Request{Type: "session", ID: "s1", To: "exploded", Actor: ActorOrchestrator}, ErrUnknownState, CauseUnknownState},
		{"unknown expect_from", Request{Type: "session", ID: "s1", To: "completed", ExpectFrom: "nope", Actor: ActorOrchestrator}, ErrUnknownState, CauseUnknownState},
		{"edge not in graph", Request{Type: "session", ID: "s1", To: "pending", Actor: ActorOrchestrator}, ErrInvalidTransition, CauseInvalidTransition},
		{"unregistered reason", Request{Type: "session", ID: "s1", To: "failed", Reason: &state.StateReason{Code: "run.failed.gremlins"}, Actor: ActorOrchestrator}, ErrUnknownReason, CauseUnknownReason},
		{"another type's reason", Request{Type: "session", ID: "s1", To: "failed", Reason: reason(state.TeamHealthOrphaned), Actor: ActorOrchestrator}, ErrUnknownReason, CauseUnknownReason},
		{"malformed reason", Request{Type: "session", ID: "s1", To: "failed", Reason: &state.StateReason{Code: "Failed!"}, Actor: ActorOrchestrator}, state.ErrMalformedCode, CauseUnknownReason},
		{"reason required", Request{Type: "session", ID: "s1", To: "failed", Actor: ActorOrchestrator}, ErrReasonRequired, CauseReasonRequired},
		{"reaper always needs a reason", Request{Type: "session", ID: "s1", To: "completed", Actor: ActorReaper}, ErrReasonRequired, CauseReasonRequired},
		{"orchestrator may not claim the reaper's verdict", Request{Type: "session", ID: "s1", To: "aborted", Reason: reason(state.SystemHealthProcessDeadNoTerminal), Actor: ActorOrchestrator}, ErrForbidden, CauseForbidden},
		{"admin may not claim a phantom reap", Request{Type: "session", ID: "s1", To: "aborted", Reason: reason(state.SystemReaperPhantomProcessDead), Actor: ActorAdmin}, ErrForbidden, CauseForbidden},
		{"exec may not claim the reaper's verdict", Request{Type: "session", ID: "s1", To: "aborted", Reason: reason(state.SystemReaperPhantomOrphaned), Actor: ActorExec}, ErrForbidden, CauseForbidden},
		{"admin may not complete", Request{Type: "session", ID: "s1", To: "completed", Actor: ActorAdmin}, ErrForbidden, CauseForbidden},
		{"admin may not time out", Request{Type: "session", ID: "s1", To: "timed_out", Reason: reason(state.RunTimedOutDeadline), Actor: ActorAdmin}, ErrForbidden, CauseForbidden},
		{"stale expect_from", Request{Type: "session", ID: "s1", To: "completed", ExpectFrom: "pending", Actor: ActorOrchestrator}, ErrConflict, CauseConflict},
		{"unknown actor", Request{Type: "session", ID: "s1", To: "completed", Actor: "root"}, ErrInvalidInput, CauseInvalidInput},
		{"unknown trigger", Request{Type: "session", ID: "s1", To: "completed", Actor: ActorOrchestrator, Trigger: "whim"}, ErrInvalidInput, CauseInvalidInput},
		{"bad evidence kind", Request{Type: "session", ID: "s1", To: "failed", Reason: &state.StateReason{Code: state.RunFailedOperator, Evidence: []state.EvidenceRef{{Kind: "rumour"}}}, Actor: ActorAdmin}, ErrInvalidInput, CauseInvalidInput},
		{"a workflow's timed_out without a timeout", Request{Type: "workflow", ID: "wf", To: "timed_out", Reason: reason(state.RunTimedOutDeadline), Actor: ActorOrchestrator}, ErrInvalidTransition, CauseInvalidTransition},
		{"not found", Request{Type: "session", ID: "nope", To: "completed", Actor: ActorOrchestrator}, ErrNotFound, CauseNotFound},
		{"bad id", Request{Type: "session", ID: "a/b", To: "completed", Actor: ActorOrchestrator}, ErrInvalidInput, CauseInvalidInput},
		{"legacy has no lifecycle", Request{Type: "session", ID: "legacy", To: "completed", Actor: ActorOrchestrator}, ErrInvalidTransition, CauseInvalidTransition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := take(t, st, "session", "s1")
			beforeRejected := obs.rejected["session:"+tt.cause] + obs.rejected["workflow:"+tt.cause] + obs.rejected["agent:"+tt.cause] + obs.rejected[":"+tt.cause] + obs.rejected["unknown:"+tt.cause]
			_, err := w.Transition(ctx, tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if Cause(err) != tt.cause {
				t.Errorf("cause %s, want %s", Cause(err), tt.cause)
			}
			if after := take(t, st, "session", "s1"); !reflect.DeepEqual(before, after) {
				t.Errorf("a rejected transition changed the entity:\nbefore %+v\nafter  %+v", before, after)
			}
			afterRejected := obs.rejected["session:"+tt.cause] + obs.rejected["workflow:"+tt.cause] + obs.rejected["agent:"+tt.cause] + obs.rejected[":"+tt.cause] + obs.rejected["unknown:"+tt.cause]
			if afterRejected != beforeRejected+1 {
				t.Errorf("rejection not counted under cause %s: %v", tt.cause, obs.rejected)
			}
		})
	}
}

func TestTransitionAppliesWithAudit(t *testing.T) {
	w, st, clock, obs := newTestWriter(t)
	ctx := context.Background()
	mustRegister(t, w, "session", "s1", "")
	clock.Advance(time.Second)
	if _, err := w.Transition(ctx, Request{Type: "run", ID: "s1", To: "running", Actor: ActorOrchestrator, Trigger: "spawn"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	ev := []state.EvidenceRef{{Kind: state.EvidenceToolResult, Detail: "exit 3 from pytest"}}
	res, err := w.Transition(ctx, Request{Type: "session", ID: "s1", To: "failed", ExpectFrom: "running",
		Reason: &state.StateReason{Code: state.RunFailedExitNonzero, Message: "exit 3", Evidence: ev}, Actor: ActorOrchestrator})
	if err != nil {
		t.Fatal(err)
	}
	if res.Before.LifecycleOr("") != "running" || res.After.LifecycleOr("") != "failed" || !res.After.Terminal {
		t.Fatalf("result %+v", res)
	}
	rows, err := st.Transitions(ctx, "session", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("want 3 audit rows (register, running, failed), got %d", len(rows))
	}
	if rows[0].From != nil || rows[0].To != "pending" {
		t.Errorf("registration row %+v", rows[0])
	}
	last := rows[2]
	if *last.From != "running" || last.To != "failed" || last.ReasonCode != "run.failed.exit_nonzero" || last.Message != "exit 3" ||
		last.Actor != "orchestrator" || len(last.Evidence) != 1 || last.Evidence[0].Detail != "exit 3 from pytest" || !last.At.Equal(unixAt(1_800_000_061)) {
		t.Errorf("audit row %+v", last)
	}
	if rows[1].Trigger != "spawn" {
		t.Errorf("trigger not recorded: %+v", rows[1])
	}
	e, _ := st.Get(ctx, "session", "s1")
	if !e.StartedAt.Equal(unixAt(1_800_000_001)) || !e.EndedAt.Equal(unixAt(1_800_000_061)) || e.LastSeq != last.Seq {
		t.Errorf("timestamps/seq: started %v ended %v seq %d/%d", e.StartedAt, e.EndedAt, e.LastSeq, last.Seq)
	}
	ns := Normalize(e, unixAt(1_800_000_100))
	if ns.Outcome != "failed" || ns.Severity != state.SeverityCritical || len(ns.Reasons) != 1 || ns.Reasons[0].EntityID != "s1" {
		t.Errorf("view %+v", ns)
	}
	if obs.applied["session:pending>running:orchestrator"] != 1 || obs.applied["session:running>failed:orchestrator"] != 1 {
		t.Errorf("observer %v", obs.applied)
	}
	// A terminal state is a latch.
	if _, err := w.Transition(ctx, Request{Type: "session", ID: "s1", To: "running", Actor: ActorOrchestrator}); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("reopening a terminal session: %v", err)
	}
}

func TestTimedOutRecordsTimeoutAndElapsed(t *testing.T) {
	w, st, clock, _ := newTestWriter(t)
	ctx := context.Background()
	for _, typ := range []string{"session", "subagent", "workflow", "turn"} {
		e := store.Entity{Type: typ, ID: "t1", Timeout: 900 * time.Second}
		l := "running"
		e.Lifecycle = &l
		if _, err := w.Register(ctx, Registration{Entity: e, Actor: ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(901 * time.Second)
	for _, typ := range []string{"session", "subagent", "workflow", "turn"} {
		if _, err := w.Transition(ctx, Request{Type: typ, ID: "t1", To: "timed_out", Reason: reason(state.RunTimedOutDeadline), Actor: ActorOrchestrator}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		e, _ := st.Get(ctx, typ, "t1")
		if e.Timeout != 900*time.Second || e.TimeoutElapsed != 901*time.Second {
			t.Errorf("%s: timeout %v elapsed %v", typ, e.Timeout, e.TimeoutElapsed)
		}
		rows, _ := st.Transitions(ctx, typ, "t1")
		ev := rows[len(rows)-1].Evidence
		if len(ev) != 1 || !strings.Contains(ev[0].Detail, "901.0s") || !strings.Contains(ev[0].Detail, "900s") {
			t.Errorf("%s: timeout evidence %+v", typ, ev)
		}
	}
}

// TestTimedOutWithoutAKnownTimeout: a session or an invocation may time
// out on a deadline nobody told the watchdog (a child's own exit 124): the
// elapsed time is recorded and the evidence says the timeout is unknown.
// Subagents, workflows and turns must carry it (TestTransitionRejections).
func TestTimedOutWithoutAKnownTimeout(t *testing.T) {
	w, st, clock, _ := newTestWriter(t)
	ctx := context.Background()
	for _, typ := range []string{"session", "invocation", "play"} {
		mustRegister(t, w, typ, "u1", "running")
	}
	clock.Advance(42 * time.Second)
	for _, typ := range []string{"session", "invocation", "play"} {
		if _, err := w.Transition(ctx, Request{Type: typ, ID: "u1", To: "timed_out", Reason: reason(state.RunTimedOutDeadline), Actor: ActorOrchestrator}); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		e, _ := st.Get(ctx, typ, "u1")
		if e.LifecycleOr("") != "timed_out" || e.Timeout != 0 || e.TimeoutElapsed != 42*time.Second {
			t.Errorf("%s: %s timeout %v elapsed %v", typ, e.LifecycleOr(""), e.Timeout, e.TimeoutElapsed)
		}
		rows, _ := st.Transitions(ctx, typ, "u1")
		ev := rows[len(rows)-1].Evidence
		if len(ev) != 1 || !strings.Contains(ev[0].Detail, "42.0s") || !strings.Contains(ev[0].Detail, "not told") {
			t.Errorf("%s: timeout evidence %+v", typ, ev)
		}
	}
}

func TestWorkflowCompletedIsForFullCompletion(t *testing.T) {
	w, st, _, _ := newTestWriter(t)
	ctx := context.Background()
	mustRegister(t, w, "workflow", "wf", "")
	if _, err := st.RecordObservation(ctx, "workflow", "wf", store.Observation{Health: state.HealthRunning, Delivery: state.DeliveryPartial, SeenSeq: 1, At: unixAt(5)}); err != nil {
		t.Fatal(err)
	}
	_, err := w.Transition(ctx, Request{Type: "workflow", ID: "wf", To: "completed", Actor: ActorOrchestrator})
	if !errors.Is(err, ErrInvalidTransition) || !strings.Contains(err.Error(), "use partial") {
		t.Fatalf("completed over partial delivery: %v", err)
	}
	if _, err := w.Transition(ctx, Request{Type: "workflow", ID: "wf", To: "partial", Reason: reason(state.RunDeliveryPartial), Actor: ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	e, _ := st.Get(ctx, "workflow", "wf")
	if ns := Normalize(e, unixAt(10)); ns.Severity != state.SeverityWarning || ns.Outcome != "partial" {
		t.Errorf("partial workflow reads %s/%s", ns.Severity, ns.Outcome)
	}
}

func TestAgentRestartReopens(t *testing.T) {
	w, st, _, _ := newTestWriter(t)
	ctx := context.Background()
	mustRegister(t, w, "agent", "a1", "idle")
	steps := []Request{
		{To: "failed", Reason: reason(state.AgentFailedProcessCrashed), Trigger: "process_crashed"},
		{To: "starting", Trigger: "restart"},
		{To: "idle", Trigger: "connected"},
		{To: "busy", Trigger: "prompt_received"},
	}
	for _, s := range steps {
		s.Type, s.ID, s.Actor = "agent", "a1", ActorOrchestrator
		if _, err := w.Transition(ctx, s); err != nil {
			t.Fatalf("%s: %v", s.To, err)
		}
	}
	e, _ := st.Get(ctx, "agent", "a1")
	if e.Terminal || !e.EndedAt.IsZero() || ToAgentStatus(*e.Lifecycle) != "running" || ToActivityState(*e.Lifecycle) != "busy" {
		t.Errorf("after restart: terminal=%v ended=%v lifecycle=%s", e.Terminal, e.EndedAt, *e.Lifecycle)
	}
}

func TestRegisterRules(t *testing.T) {
	w, st, _, _ := newTestWriter(t)
	ctx := context.Background()
	running := "running"
	bogus := "exploded"
	tests := []struct {
		name string
		reg  Registration
		want error
	}{
		{"unknown type", Registration{Entity: store.Entity{Type: "widget", ID: "x"}}, ErrUnknownType},
		{"missing id", Registration{Entity: store.Entity{Type: "session"}}, ErrInvalidInput},
		{"unknown lifecycle", Registration{Entity: store.Entity{Type: "session", ID: "x", Lifecycle: &bogus}}, ErrUnknownState},
		{"negative pid", Registration{Entity: store.Entity{Type: "session", ID: "x", PID: -5}}, ErrOutOfRange},
		{"pid over PID_MAX_LIMIT", Registration{Entity: store.Entity{Type: "session", ID: "x", PID: MaxPID + 1}}, ErrOutOfRange},
		{"timeout over a year", Registration{Entity: store.Entity{Type: "session", ID: "x", Timeout: MaxTimeout + time.Second}}, ErrOutOfRange},
		{"min_bytes past 2^53", Registration{Entity: store.Entity{Type: "session", ID: "x", ArtifactsRoot: "/r", Artifacts: []state.ArtifactSpec{{Path: "a", MinBytes: MaxBytes + 1}}}}, ErrOutOfRange},
		{"artifacts without root", Registration{Entity: store.Entity{Type: "session", ID: "x", Artifacts: []state.ArtifactSpec{{Path: "a", Required: true}}}}, ErrInvalidInput},
		{"bad artifact kind", Registration{Entity: store.Entity{Type: "session", ID: "x", ArtifactsRoot: "/r", Artifacts: []state.ArtifactSpec{{Path: "a", Kind: "blob"}}}}, ErrInvalidInput},
		{"lock pattern", Registration{Entity: store.Entity{Type: "session", ID: "x", LockFiles: []string{"/r/*.lock"}}}, ErrInvalidInput},
		{"bad parent type", Registration{Entity: store.Entity{Type: "team", ID: "x", ParentType: "galaxy", ParentID: "g"}}, ErrInvalidInput},
		{"bad cron", Registration{Entity: store.Entity{Type: "schedule", ID: "x", ScheduleCron: "every tuesday"}}, ErrInvalidInput},
		{"legacy with lifecycle", Registration{Entity: store.Entity{Type: "session", ID: "x", Lifecycle: &running}, Legacy: true}, ErrInvalidInput},
		// Contracts the probe would not check in full (state.MaxArtifact*).
		{"too many artifacts", Registration{Entity: store.Entity{Type: "session", ID: "x", ArtifactsRoot: "/r", Artifacts: manyArtifacts(state.MaxArtifacts + 1)}}, ErrOverLimit},
		{"too deep", Registration{Entity: store.Entity{Type: "session", ID: "x", ArtifactsRoot: "/r", Artifacts: []state.ArtifactSpec{{Path: strings.Repeat("*/", 29) + "x"}}}}, ErrOverLimit},
		{"too many wildcards", Registration{Entity: store.Entity{Type: "session", ID: "x", ArtifactsRoot: "/r", Artifacts: []state.ArtifactSpec{{Path: "*/*/*/*/*/x"}}}}, ErrOverLimit},
		{"path too long", Registration{Entity: store.Entity{Type: "session", ID: "x", ArtifactsRoot: "/r", Artifacts: []state.ArtifactSpec{{Path: strings.Repeat("a", state.MaxArtifactPathBytes+1)}}}}, ErrOverLimit},
	}
	for _, tt := range tests {
		tt.reg.Actor = ActorOrchestrator
		if _, err := w.Register(ctx, tt.reg); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if list, _ := st.List(ctx, store.Filter{}); len(list) != 0 {
		t.Fatalf("rejected registrations stored %d entities", len(list))
	}

	// Re-registering updates fields but never the lifecycle.
	mustRegister(t, w, "session", "s1", "running")
	if _, err := w.Transition(ctx, Request{Type: "session", ID: "s1", To: "completed", Actor: ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	created, err := w.Register(ctx, Registration{Entity: store.Entity{Type: "session", ID: "s1", Label: "renamed", Lifecycle: &running}, Actor: ActorOrchestrator})
	if err != nil || created {
		t.Fatalf("re-register: created=%v err=%v", created, err)
	}
	e, _ := st.Get(ctx, "session", "s1")
	if e.LifecycleOr("") != "completed" || e.Label != "renamed" {
		t.Errorf("after re-register: lifecycle %s label %q", e.LifecycleOr(""), e.Label)
	}

	// An explicit legacy entity is stored with a NULL lifecycle.
	if _, err := w.Register(ctx, Registration{Entity: store.Entity{Type: "session", ID: "old"}, Legacy: true, Actor: ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	e, _ = st.Get(ctx, "session", "old")
	if e.Lifecycle != nil || !Normalize(e, unixAt(0)).Legacy() {
		t.Errorf("legacy entity %+v", e)
	}
}

func manyArtifacts(n int) []state.ArtifactSpec {
	specs := make([]state.ArtifactSpec, n)
	for i := range specs {
		specs[i] = state.ArtifactSpec{Path: fmt.Sprintf("out-%d/*.md", i), Required: true}
	}
	return specs
}

type fakeIdent struct{}

func (fakeIdent) HostID() string          { return "host-a" }
func (fakeIdent) BootID() (string, error) { return "boot-1", nil }
func (fakeIdent) StartOf(pid int) (time.Time, uint64, error) {
	return unixAt(1234.5), 99, nil
}

func TestRegisterFillsLocalIdentity(t *testing.T) {
	w, st, _, _ := newTestWriter(t)
	w.Ident = fakeIdent{}
	ctx := context.Background()
	for _, e := range []store.Entity{
		{Type: "session", ID: "local", PID: 42},
		{Type: "session", ID: "remote", PID: 42, HostID: "host-b"},
		{Type: "session", ID: "given", PID: 42, PIDStartTime: unixAt(7)},
	} {
		if _, err := w.Register(ctx, Registration{Entity: e, Actor: ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	local, _ := st.Get(ctx, "session", "local")
	if local.HostID != "host-a" || local.BootID != "boot-1" || !local.PIDStartTime.Equal(unixAt(1234.5)) || local.PIDStartTicks != 99 {
		t.Errorf("local identity not filled: %+v", local)
	}
	remote, _ := st.Get(ctx, "session", "remote")
	if remote.HostID != "host-b" || remote.BootID != "" || !remote.PIDStartTime.IsZero() {
		t.Errorf("a remote pid must not be identified here: %+v", remote)
	}
	given, _ := st.Get(ctx, "session", "given")
	if !given.PIDStartTime.Equal(unixAt(7)) {
		t.Errorf("a given start time must be kept: %v", given.PIDStartTime)
	}
}

// TestReRegistrationKeepsWhatTheWatchdogKeeps (issue 14, observation 2):
// an upsert of a known entity, whatever it says, never restarts the
// clocks the watchdog keeps (started_at, health and health_since, the
// heartbeat) nor its lifecycle; a new pid still brings its own identity.
func TestReRegistrationKeepsWhatTheWatchdogKeeps(t *testing.T) {
	running := "running"
	tests := []struct {
		name    string
		doc     store.Entity
		wantPID int
	}{
		{"same document", store.Entity{PID: 42, Lifecycle: &running}, 42},
		{"no lifecycle", store.Entity{PID: 42}, 42},
		{"a started_at of its own", store.Entity{PID: 42, Lifecycle: &running, StartedAt: unixAt(1_800_000_500)}, 42},
		{"a new pid", store.Entity{PID: 43, Lifecycle: &running, Label: "renamed"}, 43},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, st, clock, _ := newTestWriter(t)
			w.Ident = fakeIdent{}
			ctx := context.Background()
			first := store.Entity{Type: "session", ID: "s", PID: 42, Lifecycle: &running}
			if _, err := w.Register(ctx, Registration{Entity: first, Actor: ActorOrchestrator}); err != nil {
				t.Fatal(err)
			}
			e, _ := st.Get(ctx, "session", "s")
			clock.Advance(time.Minute)
			if err := st.RecordHeartbeat(ctx, "session", "s", clock.Now(), "step 1"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			stalledSince := clock.Now()
			if _, err := st.RecordObservation(ctx, "session", "s", store.Observation{Health: state.HealthStalled, Delivery: state.DeliveryNotExpected, HealthSince: stalledSince, SeenSeq: e.LastSeq, At: stalledSince}); err != nil {
				t.Fatal(err)
			}
			before, _ := st.Get(ctx, "session", "s")
			clock.Advance(time.Minute)

			doc := tt.doc
			doc.Type, doc.ID = "session", "s"
			created, err := w.Register(ctx, Registration{Entity: doc, Actor: ActorOrchestrator})
			if err != nil || created {
				t.Fatalf("re-register: created=%v err=%v", created, err)
			}
			after, _ := st.Get(ctx, "session", "s")
			kept := []struct {
				what    string
				was, is any
			}{
				{"started_at", before.StartedAt.Unix(), after.StartedAt.Unix()},
				{"health", before.Health, after.Health},
				{"health_since", before.HealthSince.Unix(), after.HealthSince.Unix()},
				{"heartbeat_at", before.HeartbeatAt.Unix(), after.HeartbeatAt.Unix()},
				{"lifecycle", before.LifecycleOr(""), after.LifecycleOr("")},
				{"lifecycle_at", before.LifecycleAt.Unix(), after.LifecycleAt.Unix()},
			}
			for _, k := range kept {
				if k.was != k.is {
					t.Errorf("%s changed from %v to %v", k.what, k.was, k.is)
				}
			}
			if !before.StartedAt.Equal(e.StartedAt) || e.StartedAt.IsZero() {
				t.Errorf("started_at %v, registered at %v", before.StartedAt, e.StartedAt)
			}
			if after.PID != tt.wantPID || after.PIDStartTicks != 99 {
				t.Errorf("pid %d (start ticks %d), want %d with its own identity", after.PID, after.PIDStartTicks, tt.wantPID)
			}
		})
	}
}
