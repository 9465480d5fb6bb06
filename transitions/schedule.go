package transitions

// scheduleGraph: a schedule never ends; its health (due, misfired) is what
// the check_schedules job watches.
var scheduleGraph = Graph{
	Type:    "schedule",
	States:  []string{"enabled", "paused", "disabled"},
	Initial: "enabled",
	Edges: map[string][]string{
		"enabled":  {"paused", "disabled"},
		"paused":   {"enabled", "disabled"},
		"disabled": {"enabled"},
	},
	ByCron:   true,
	Hostless: true,
}
