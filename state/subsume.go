package state

import "strings"

// Subsumes reports whether the reason of a terminal transition subsumes a
// probe finding of the same entity: the finding is what the transition was
// based on, so the two are one cause and the entity shows, queues and
// counts the transition's reason alone (docs/reference/state-model.md, Display chain: one item per cause):
//
//   - a failed artifact contract (`*.failed.artifact_contract`) subsumes
//     the delivery findings (`*.delivery.*`) that measured the contract;
//   - a phantom reaped for its orphaned process
//     (system.reaper.phantom_orphaned) subsumes `*.health.orphaned`;
//   - an end recorded because the process died
//     (system.reaper.phantom_process_dead,
//     system.health.process_dead_no_terminal) subsumes the findings of a
//     death: `*.health.process_dead`, `*.health.pid_reused` and
//     `*.health.host_rebooted`.
//
// Every other pair is two causes, and both stay.
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

// Unsubsumed returns the findings that transition does not subsume
// (Subsumes), in order; findings itself when none is.
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

// codeTail splits a code `<namespace>.<dimension>.<cause>` into its
// dimension and cause.
func codeTail(c ReasonCode) (dimension, cause string, ok bool) {
	parts := strings.Split(string(c), ".")
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[1], parts[2], true
}
