package transitions

// workflowGraph (ADR 26): completed is reserved for full completion; a
// bounded partial result is `partial`, which reads as a warning.
var workflowGraph = Graph{
	Type:     "workflow",
	States:   []string{"running", "held", "completed", "partial", "failed", "timed_out", "cancelled"},
	Initial:  "running",
	Terminal: []string{"completed", "partial", "failed", "timed_out", "cancelled"},
	Edges: map[string][]string{
		"running": {"completed", "partial", "failed", "timed_out", "held"},
		"held":    {"running", "failed", "cancelled"},
	},
	DeadProcessTerminal: "failed",
}
