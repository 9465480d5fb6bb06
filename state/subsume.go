package state

import "strings"

// Subsumes reports whether a terminal transition's reason subsumes a probe
// finding it was based on: one cause, so only the transition's reason counts.
func Subsumes(transition, finding ReasonCode) bool {
	kind, cause, ok := codeTail(finding)
	if !ok {
		return false
	}
	switch {
	case strings.HasSuffix(string(transition), ".failed.artifact_contract"):
		return kind == "delivery"
	case transition == SystemReaperPhantomOrphaned:
		return kind == "health" && cause == "orphaned"
	case transition == SystemReaperPhantomProcessDead, transition == SystemHealthProcessDeadNoTerminal:
		return kind == "health" && (cause == "process_dead" || cause == "pid_reused" || cause == "host_rebooted")
	}
	return false
}

// Unsubsumed returns the findings transition does not subsume, in order.
func Unsubsumed(transition ReasonCode, findings []StateReason) []StateReason {
	keep := -1
	for i, r := range findings {
		if Subsumes(transition, r.Code) {
			keep = i
			break
		}
	}
	if keep < 0 {
		return findings
	}
	out := append([]StateReason(nil), findings[:keep]...)
	for _, r := range findings[keep+1:] {
		if !Subsumes(transition, r.Code) {
			out = append(out, r)
		}
	}
	return out
}

func codeTail(c ReasonCode) (dimension, cause string, ok bool) {
	parts := strings.Split(string(c), ".")
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[1], parts[2], true
}
