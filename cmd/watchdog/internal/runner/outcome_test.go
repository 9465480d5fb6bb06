package runner

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/transitions"
)

// TestOutcome pins how an end becomes the transition exec sends: the exit
// mapping adapted to the type, and a child's own exit 124 without
// --timeout, which types whose timed_out needs the configured timeout
// record as failed.
func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name     string
		typ      string
		timeout  time.Duration
		end      childEnd
		to, code string
		msg      string
	}{
		{"zero exit", "session", 0, childEnd{code: 0}, "completed", string(state.RunCompletedExitZero), "exit status 0"},
		{"zero exit, invocation", "invocation", 0, childEnd{code: 0}, "succeeded", string(state.RunCompletedExitZero), "exit status 0"},
		{"our deadline", "session", time.Second, childEnd{code: -1, signal: syscall.SIGTERM, timedOut: true, elapsed: time.Second}, "timed_out", string(state.RunTimedOutDeadline), "timed out after 1s (killed by SIGTERM)"},
		{"child's own 124", "session", 0, childEnd{code: 124}, "timed_out", string(state.RunTimedOutDeadline), "exit status 124 (the child's own timeout; exec was given no --timeout)"},
		{"child's own 124, workflow", "workflow", 0, childEnd{code: 124}, "failed", string(state.RunFailedExitNonzero), "exit status 124 (the timeout convention, but a workflow's timed_out needs the configured timeout: give --timeout)"},
		{"SIGINT", "session", 0, childEnd{code: -1, signal: syscall.SIGINT}, "cancelled", string(state.RunCancelledSigint), "killed by SIGINT"},
		{"SIGTERM, workflow", "workflow", 0, childEnd{code: -1, signal: syscall.SIGTERM}, "cancelled", string(state.RunCancelledSigterm), "killed by SIGTERM"},
		{"SIGINT, turn", "turn", 0, childEnd{code: -1, signal: syscall.SIGINT}, "interrupted", string(state.RunInterruptedSigint), "killed by SIGINT"},
		{"exit 3", "session", 0, childEnd{code: 3}, "failed", string(state.RunFailedExitNonzero), "exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newPlan(Options{Type: tc.typ, ID: "x", Timeout: tc.timeout}, []string{"true"})
			if err != nil {
				t.Fatal(err)
			}
			got := p.outcome(p.graph.MapExit(tc.end.code, tc.end.signal, tc.end.timedOut, p.reg.TimeoutSeconds > 0), tc.end, time.Now())
			if got.To != tc.to || got.Reason == nil || got.Reason.Code != tc.code || got.Reason.Message != tc.msg {
				t.Errorf("got %s %+v, want %s %s %q", got.To, got.Reason, tc.to, tc.code, tc.msg)
			}
			if got.ExpectFrom != "running" || got.Actor != transitions.ActorExec {
				t.Errorf("expect_from %q actor %q", got.ExpectFrom, got.Actor)
			}
		})
	}
}

// TestPlanRefusesBeforeRunning: bad options are exec's own usage error
// (125), decided before anything starts.
func TestPlanRefusesBeforeRunning(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Type: "nope"}, "unknown entity type"},
		{Options{Type: "session", Timeout: -time.Second}, "must not be negative"},
		{Options{Type: "session", ArtifactsRoot: "/tmp"}, "--artifacts-root needs --artifact or --contract"},
	} {
		_, err := newPlan(tc.o, []string{"true"})
		ee, ok := err.(*ExitError)
		if !ok || ee.Code != ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want exit %d with %q", tc.o, err, ExitUsage, tc.want)
		}
	}
}

// TestEveryWrappedTypeEndsAsMapped: every type whose work exec runs (a
// process of its own, a running state: all of them but the agent, whose
// lifecycle is busy and idle) is wrapped, and for each, every end MapExit
// can give (completed, failed, timed_out, aborted, cancelled) is an edge
// from running, or Nearest's fallback for it is. It walks the graphs, not
// Types(): a graph that lost running, or running -> failed (which would
// record a plain non-zero exit as aborted or cancelled), names the type.
func TestEveryWrappedTypeEndsAsMapped(t *testing.T) {
	want := []string{"invocation", "session", "subagent", "turn", "workflow"}
	if got := Types(); !slices.Equal(got, want) {
		t.Errorf("exec wraps %v, want %v", got, want)
	}
	for _, typ := range transitions.Types() {
		g, _ := transitions.Lookup(typ)
		if !slices.Contains(want, typ) {
			continue
		}
		if !g.HasState("running") {
			t.Errorf("%s: exec wraps it but its graph has no running state", typ)
			continue
		}
		if !g.Allowed("running", "failed") {
			t.Errorf("%s: exec wraps it but running -> failed is not an edge", typ)
		}
		for _, to := range []string{"completed", "failed", "timed_out", "aborted", "cancelled"} {
			if got := g.Nearest("running", to); got == "" {
				t.Errorf("%s: no end for %s from running", typ, to)
			}
		}
	}
}
