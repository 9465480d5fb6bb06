package judge

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// The finding is Judge's: only when the entity ended or its process died,
// one reason naming each process, a message that says what the root did
// and what is left, and the same finding sweep after sweep.
func TestLeftoverFinding(t *testing.T) {
	e := store.Entity{Type: "session", ID: "s", Lifecycle: lc("running"), PID: 4242, PIDStartTime: t0, PIDStartTicks: 7, StartedAt: t0}
	procs := []probe.Process{
		{PID: 4243, StartTicks: 8, StartTime: t0, Comm: "node", RSS: 3 << 20},
		{PID: 4250, StartTicks: 9, StartTime: t0, Comm: "chrome", RSS: 700 << 10},
		{PID: 4251, StartTicks: 9, StartTime: t0, Comm: "chrome"},
	}
	now := t0.Add(time.Minute)

	s := seen(e, probe.Alive, time.Time{}, false, now)
	s.Descendants = procs
	if v := Judge(e, s, DefaultSettings, now); hasCode(v.Observation.Reasons, state.RunHealthLeftoverProcesses) {
		t.Fatal("an open entity with a live process has no leftovers")
	}

	e.Exit = &state.ExitStatus{Code: 0, At: now}
	s = seen(e, probe.Dead, time.Time{}, false, now)
	s.Descendants = procs
	v := Judge(e, s, DefaultSettings, now)
	if v.Observation.Health != state.HealthProcessDead {
		t.Errorf("health %s, want process_dead", v.Observation.Health)
	}
	var r *state.StateReason
	for i := range v.Observation.Reasons {
		if v.Observation.Reasons[i].Code == state.RunHealthLeftoverProcesses {
			r = &v.Observation.Reasons[i]
		}
	}
	if r == nil {
		t.Fatalf("no leftover finding: %+v", v.Observation.Reasons)
	}
	if want := "pid 4242 exited with status 0; 3 descendants still running (node, chrome ×2)"; r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}
	if len(r.Evidence) != 3 || r.Evidence[0].ID != "pid:4243:8" || r.Evidence[0].Detail != "pid 4243 node, started "+state.Stamp(t0)+", RSS 3.0 MiB" {
		t.Errorf("evidence %+v", r.Evidence)
	}
	if got := Leftovers(&store.Entity{Reasons: v.Observation.Reasons}); len(got) != 3 || got[2] != (LeftoverRef{PID: 4251, StartTicks: 9}) {
		t.Errorf("Leftovers %+v", got)
	}

	// Recorded, then seen again with other RSS: nothing new to write.
	after := Recorded(e, v.Observation)
	procs[0].RSS = 9 << 20
	if v2 := Judge(after, s, DefaultSettings, now.Add(time.Minute)); v2.Changed {
		t.Errorf("the same leftovers were judged changed: %+v", v2.Observation.Reasons)
	}

	// Severity: the finding's own while open is warning (the dead root
	// makes the entity critical anyway); ended, critical even with an ok
	// health.
	open := state.Normalize("running", "", state.HealthRunning, state.DeliveryNotExpected, []state.StateReason{*r}, now)
	ended := state.Normalize("completed", "completed", state.HealthOK, state.DeliveryNotExpected, []state.StateReason{*r}, now)
	if open.Severity != state.SeverityWarning || ended.Severity != state.SeverityCritical {
		t.Errorf("severity open %s, ended %s; want warning, critical", open.Severity, ended.Severity)
	}
}

// TestLeftoverFindingBounded: 20,000 leftovers of 20,000 commands make a
// finding of MaxLeftoverDetail evidence lines, the first by pid, and a
// message that counts them all and names a few commands (issue 37: one
// finding made a 4.6 MB entity read).
func TestLeftoverFindingBounded(t *testing.T) {
	e := store.Entity{Type: "session", ID: "s", Lifecycle: lc("running"), PID: 4242, PIDStartTime: t0, PIDStartTicks: 7, StartedAt: t0}
	procs := make([]probe.Process, 20000)
	for i := range procs {
		procs[i] = probe.Process{PID: 10000 + i, StartTicks: 8, StartTime: t0, Comm: fmt.Sprintf("worker-%d", i%5000)}
	}
	now := t0.Add(time.Minute)
	e.Exit = &state.ExitStatus{Code: 0, At: now}
	s := seen(e, probe.Dead, time.Time{}, false, now)
	s.Descendants = procs
	v := Judge(e, s, DefaultSettings, now)
	var r *state.StateReason
	for i := range v.Observation.Reasons {
		if v.Observation.Reasons[i].Code == state.RunHealthLeftoverProcesses {
			r = &v.Observation.Reasons[i]
		}
	}
	if r == nil {
		t.Fatalf("no leftover finding: %+v", v.Observation.Reasons)
	}
	if len(r.Evidence) != MaxLeftoverDetail+1 || r.Evidence[0].ID != "pid:10000:8" || r.Evidence[MaxLeftoverDetail-1].ID != fmt.Sprintf("pid:%d:8", 10000+MaxLeftoverDetail-1) ||
		r.Evidence[MaxLeftoverDetail].ID != "more:19900" {
		t.Errorf("%d evidence lines from %s to %s, want the first %d by pid and more:19900", len(r.Evidence), r.Evidence[0].ID, r.Evidence[len(r.Evidence)-1].ID, MaxLeftoverDetail)
	}
	if got := Leftovers(&store.Entity{Reasons: v.Observation.Reasons}); len(got) != MaxLeftoverDetail {
		t.Errorf("Leftovers names %d processes, want the %d in detail (the count is never signalled)", len(got), MaxLeftoverDetail)
	}
	want := "pid 4242 exited with status 0; 20000 descendants still running (worker-0 ×4, worker-1 ×4, worker-2 ×4, worker-3 ×4, worker-4 ×4, worker-5 ×4, worker-6 ×4, worker-7 ×4, 4992 other commands); the first 100 by pid in the evidence"
	if r.Message != want {
		t.Errorf("message %q, want %q", r.Message, want)
	}
	if len(r.Message) > 400 {
		t.Errorf("message of %d bytes", len(r.Message))
	}
}

// TestLeftoversNeverFromClientEvidence: an end's evidence is the
// client's (exec's list of what its child left, any orchestrator's
// reason): it names no process the reaper looks at or signals, ended or
// open, whatever its IDs say (issue 36). Only the stored finding does.
func TestLeftoversNeverFromClientEvidence(t *testing.T) {
	end := &state.StateReason{Code: state.RunCompletedExitZero, Evidence: []state.EvidenceRef{
		{Kind: state.EvidenceToolResult, ID: "pid:4243:77", Detail: "pid 4243 sleep, left by the command: left running (--kill-leftovers=false)"},
		{Kind: state.EvidenceToolResult, ID: "pid:26666:151810"},
	}}
	for _, terminal := range []bool{true, false} {
		if got := Leftovers(&store.Entity{Terminal: terminal, TransitionReason: end}); len(got) != 0 {
			t.Errorf("terminal %t: Leftovers %+v from the client's evidence, want none", terminal, got)
		}
	}
	finding := state.StateReason{Code: state.RunHealthLeftoverProcesses, Evidence: []state.EvidenceRef{{Kind: state.EvidenceToolResult, ID: "pid:4243:77"}}}
	got := Leftovers(&store.Entity{Terminal: true, TransitionReason: end, Reasons: []state.StateReason{finding}})
	if !slices.Equal(got, []LeftoverRef{{PID: 4243, StartTicks: 77}}) {
		t.Errorf("the stored finding: %+v", got)
	}
}
