package probe

import (
	"fmt"
	"strings"

	"watchdog/state"
)

// Exit codes of `watchdog probe`, those of a monitoring plugin.
const (
	ExitOK       = 0 // neutral or info
	ExitWarning  = 1
	ExitCritical = 2
	ExitUnknown  = 3 // could not decide: bad arguments, liveness unknown
)

// Verdict is a probe's judgement as a monitoring plugin reports it: an
// exit code and a few lines of text.
type Verdict struct {
	State state.NormalizedState
	// Undecided says the probe could not decide (liveness or health
	// unknown): exit 3, whatever the severity.
	Undecided bool
	// Display is the display chain of the first line.
	Display string
	// Reasons and Evidence are listed under the first line, then Notes.
	Reasons  []state.StateReason
	Evidence []state.EvidenceRef
	Notes    []string
}

// ExitCode is the plugin exit code: unknown when undecided, else by
// severity.
func (v Verdict) ExitCode() int {
	switch {
	case v.Undecided:
		return ExitUnknown
	case v.State.Severity == state.SeverityCritical:
		return ExitCritical
	case v.State.Severity == state.SeverityWarning:
		return ExitWarning
	}
	return ExitOK
}

// Rendered is v with every reason's message rendered for printing; render
// once, as Render appends the age.
func (v Verdict) Rendered() Verdict {
	at := v.State.EvaluatedAt.Time
	v.State.Reasons = state.Rendered(v.State.Reasons, at)
	v.Reasons = state.Rendered(v.Reasons, at)
	return v
}

// Text is the plugin output: "SEVERITY - display chain", then the
// reasons, the evidence and the notes, one a line.
func (v Verdict) Text() string {
	label := strings.ToUpper(string(v.State.Severity))
	if v.Undecided {
		label = "UNKNOWN"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - %s\n", label, v.Display)
	for _, r := range v.Reasons {
		fmt.Fprintf(&b, "  reason %s: %s\n", r.Code, r.Message)
	}
	for _, ev := range v.Evidence {
		fmt.Fprintf(&b, "  evidence: %s\n", ev.Detail)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	return b.String()
}
