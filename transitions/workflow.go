package transitions

import (
	"fmt"

	"watchdog/state"
	"watchdog/store"
)

// workflowGraph (ADR 26): completed is reserved for full completion; a
// bounded partial result is `partial`, which reads as a warning. A running
// workflow may be cancelled (the Runtime terminal-state and replay contract lists cancelled among its ends): a
// SIGTERM or a Ctrl-C is intended, not a failure (issue 14, observation 11).
var workflowGraph = Graph{
	Type:        "workflow",
	States:      []string{"running", "held", "completed", "partial", "failed", "timed_out", "cancelled"},
	Start:       "running",
	Initial:     "running",
	Terminal:    []string{"completed", "partial", "failed", "timed_out", "cancelled"},
	OnInterrupt: "cancelled",
	OnTerminate: "cancelled",
	Edges: map[string][]string{
		"running": {"completed", "partial", "failed", "timed_out", "cancelled", "held"},
		"held":    {"running", "failed", "cancelled"},
	},
	DeadProcessTerminal: "failed",
	NeedsTimeout:        true,
	FullCompletion:      true,
	Guard:               fullCompletionOnly,

	// Heartbeat staleness is judged only here (held waits for a person).
	WorkingStates: []string{"running"},
}

// fullCompletionOnly refuses completed to a workflow whose stored
// delivery says part of the result is missing or invalid: the rule where
// no contract was judged at the end (no Contracts, or another host's
// files). Judged at the end, the contract must pass (FullCompletion).
func fullCompletionOnly(to string, cur store.Entity) error {
	if to != "completed" {
		return nil
	}
	switch cur.Delivery {
	case state.DeliveryPartial, state.DeliveryMissing, state.DeliveryInvalid:
		return fmt.Errorf("workflow %s delivery is %s; completed is reserved for full completion (use partial or failed)", cur.ID, cur.Delivery)
	}
	return nil
}
