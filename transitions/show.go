package transitions

import "watchdog/state"

// showGraph: a show ends by being archived; completed, merged and failed
// are outcomes until then. It has no process: only a failed critical-path
// play ends it.
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
