package transitions

import (
	"fmt"

	"watchdog/state"
	"watchdog/store"
)

// workflowGraph: completed is reserved for full completion; a bounded
// partial result is `partial`, a warning. A stop by signal is cancelled.
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

	// held waits for a person.
	WorkingStates: []string{"running"},
}

// fullCompletionOnly refuses completed when the stored delivery says part
// of the result is missing or invalid, where no contract was judged at the end.
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
