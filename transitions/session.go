package transitions

// sessionGraph is the Session Status Vocabulary design's session vocabulary (alias `run`). Admins may
// only mark a session failed, aborted or cancelled: completed and timed_out
// are facts the system observes, not verdicts an operator hands out.
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

	// Heartbeat staleness is judged only here.
	WorkingStates: []string{"running"},
}
