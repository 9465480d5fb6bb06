package transitions

import "watchdog/state"

// teamGraph: a team is closed by its owner, or by the reaper when its
// parent show or play has ended (team.health.orphaned).
var teamGraph = Graph{
	Type:     "team",
	States:   []string{"active", "idle", "blocked", "closed"},
	Initial:  "active",
	Terminal: []string{"closed"},
	Edges: map[string][]string{
		"active":  {"idle", "blocked", "closed"},
		"idle":    {"active", "blocked", "closed"},
		"blocked": {"active", "closed"},
	},
	Reconcile: &Reconciliation{Rule: ReconcileParentEnded, To: "closed", Codes: []state.ReasonCode{state.TeamHealthOrphaned},
		ParentTypes: []string{"show", "play"}},
	Hostless: true,
}
