package transitions

// agentGraph is the orchestrator's unified ExecutionState: lifecycle and
// activity in one machine. stopped and failed are terminal but restartable.
var agentGraph = Graph{
	Type:        "agent",
	States:      []string{"pending", "starting", "idle", "busy", "suspended", "stopped", "failed"},
	Initial:     "pending",
	Terminal:    []string{"stopped", "failed"},
	OnInterrupt: "stopped",
	OnTerminate: "stopped",
	Edges: map[string][]string{
		"pending":   {"starting", "failed"},
		"starting":  {"idle", "failed"},
		"idle":      {"busy", "suspended", "stopped", "failed"},
		"busy":      {"idle", "suspended", "stopped", "failed"},
		"suspended": {"idle", "busy", "stopped", "failed"},
		"stopped":   {"starting"},
		"failed":    {"starting"},
	},
	DeadProcessTerminal: "failed",
	// Operators read why an agent moved (state-model.md, Lifecycle graphs).
	NeedsTrigger: true,

	// idle and suspended wait for input: no heartbeat is due.
	WorkingStates: []string{"starting", "busy"},
}

// ToAgentStatus maps an agent lifecycle to the legacy AgentStatus the
// orchestrator API still serves (pending, running, stopped, failed).
func ToAgentStatus(lifecycle string) string {
	switch lifecycle {
	case "pending", "starting":
		return "pending"
	case "idle", "busy", "suspended":
		return "running"
	case "stopped":
		return "stopped"
	case "failed":
		return "failed"
	}
	return ""
}

// ToActivityState maps an agent lifecycle to the legacy ActivityState:
// busy while busy, idle otherwise.
func ToActivityState(lifecycle string) string {
	if lifecycle == "busy" {
		return "busy"
	}
	return "idle"
}

// Triggers is the closed vocabulary of why a transition happened (required
// for agents, optional elsewhere).
var Triggers = []string{
	"spawn", "connected", "disconnected", "prompt_received", "result_received",
	"context_cleared", "user_terminated", "process_exited", "process_crashed",
	"restart", "reconciliation",
}

// ValidTrigger reports whether t is "" (none) or one of Triggers.
func ValidTrigger(t string) bool { return t == "" || contains(Triggers, t) }
