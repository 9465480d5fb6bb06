package transitions

// sessionGraph is the session vocabulary (alias `run`). Admins may only
// mark failed, aborted or cancelled: the rest are facts the system observes.
var sessionGraph = Graph{
	Type:        "session",
	States:      []string{"pending", "running", "completed", "failed", "timed_out", "cancelled", "aborted"},
	Start:       "running",
	Initial:     "pending",
	Terminal:    []string{"completed", "failed", "timed_out", "cancelled", "aborted"},
	OnInterrupt: "cancelled",
	OnTerminate: "cancelled",
	Edges: map[string][]string{
		"pending": {"running", "failed", "cancelled", "aborted"},
		"running": {"completed", "failed", "timed_out", "cancelled", "aborted"},
	},
	DeadProcessTerminal: "aborted",
	AdminTargets:        []string{"failed", "aborted", "cancelled"},

	WorkingStates: []string{"running"},
}
