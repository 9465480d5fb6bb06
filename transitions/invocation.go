package transitions

// invocationGraph: short-lived tool or job invocations.
var invocationGraph = Graph{
	Type:        "invocation",
	States:      []string{"pending", "running", "succeeded", "failed", "timed_out", "cancelled", "skipped"},
	Start:       "running",
	Initial:     "pending",
	Terminal:    []string{"succeeded", "failed", "timed_out", "cancelled", "skipped"},
	OnInterrupt: "cancelled",
	OnTerminate: "cancelled",
	Edges: map[string][]string{
		"pending": {"running", "skipped", "cancelled"},
		"running": {"succeeded", "failed", "timed_out", "cancelled"},
	},
	DeadProcessTerminal: "failed",

	WorkingStates: []string{"running"},
}
