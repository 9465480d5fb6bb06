package transitions

// turnGraph: every state but running is terminal.
var turnGraph = Graph{
	Type:        "turn",
	States:      []string{"running", "completed", "partial_failed", "failed", "interrupted", "timed_out"},
	Start:       "running",
	Initial:     "running",
	Terminal:    []string{"completed", "partial_failed", "failed", "interrupted", "timed_out"},
	OnInterrupt: "interrupted",
	OnTerminate: "interrupted",
	Edges: map[string][]string{
		"running": {"completed", "partial_failed", "failed", "interrupted", "timed_out"},
	},
	DeadProcessTerminal: "failed",
	NeedsTimeout:        true,

	WorkingStates: []string{"running"},
}
