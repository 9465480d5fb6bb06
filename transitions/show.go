package transitions

import "watchdog/state"

// showGraph: a show ends by being archived; completed, merged and failed
// are its outcomes while it waits for that. A show has no process of its
// own, so the reaper never ends it for a dead pid (only for a failed
// critical-path play).
var showGraph = Graph{
	Hostless: true,
	Type:     "show",
	States:   []string{"draft", "planned", "active", "completed", "merged", "failed", "archived"},
	Initial:  "draft",
	Terminal: []string{"archived"},
	Outcomes: []string{"completed", "merged", "failed"},
	Edges: map[string][]string{
		"draft":     {"planned", "archived"},
		"planned":   {"active", "archived"},
		"active":    {"completed", "merged", "failed", "archived"},
		"completed": {"archived"},
		"merged":    {"archived"},
		"failed":    {"archived"},
	},
	Reconcile: &Reconciliation{Rule: ReconcileCriticalPath, To: "failed", Codes: []state.ReasonCode{state.ShowFailedCriticalPathBlocked}},
}
