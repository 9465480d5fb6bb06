package transitions

import "watchdog/state"

// playGraph: a play can be blocked (by a failed or missing dependency) at
// any point before it completes, and unblocked back into the queue.
var playGraph = Graph{
	Hostless:    true,
	Type:        "play",
	States:      []string{"planned", "queued", "running", "run_complete", "blocked", "merged", "failed", "timed_out", "cancelled", "skipped"},
	Start:       "running",
	Initial:     "planned",
	Terminal:    []string{"merged", "failed", "timed_out", "cancelled", "skipped"},
	OnInterrupt: "cancelled",
	OnTerminate: "cancelled",
	Edges: map[string][]string{
		"planned":      {"queued", "blocked", "skipped", "cancelled"},
		"queued":       {"running", "blocked", "skipped", "cancelled"},
		"running":      {"run_complete", "failed", "timed_out", "cancelled", "blocked"},
		"run_complete": {"merged", "failed"},
		"blocked":      {"queued", "failed", "skipped", "cancelled"},
	},
	// Only a play not yet past its queue is blocked (planned, queued).
	Reconcile: &Reconciliation{Rule: ReconcileDependency, To: "blocked", Codes: []state.ReasonCode{state.PlayBlockedDependencyFailed, state.PlayBlockedDependencyInvalid}},

	WorkingStates: []string{"running"},
}
