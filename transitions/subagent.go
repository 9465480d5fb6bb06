package transitions

// subagentGraph: a detached child is still open; only explicit terminal
// evidence ends it.
var subagentGraph = Graph{
	Type:        "subagent",
	States:      []string{"queued", "running", "detached", "completed", "failed", "timed_out", "interrupted", "cancelled"},
	Start:       "running",
	Initial:     "queued",
	Terminal:    []string{"completed", "failed", "timed_out", "interrupted", "cancelled"},
	OnInterrupt: "interrupted",
	OnTerminate: "cancelled",
	Edges: map[string][]string{
		"queued":   {"running", "cancelled"},
		"running":  {"completed", "failed", "timed_out", "interrupted", "cancelled", "detached"},
		"detached": {"completed", "failed", "timed_out", "cancelled"},
	},
	DeadProcessTerminal: "failed",
	NeedsTimeout:        true,

	// detached is left to its own process.
	WorkingStates: []string{"running"},
}
