package state

import (
	"slices"
	"strings"
)

// Separator joins the segments of a display chain.
const Separator = " · "

var healthLabels = map[Health]string{
	HealthOK:           "Infra OK",
	HealthRunning:      "Alive",
	HealthIdle:         "Idle",
	HealthDegraded:     "Degraded",
	HealthStalled:      "Stalled",
	HealthProcessDead:  "Process dead",
	HealthOrphaned:     "Orphaned",
	HealthDisconnected: "Disconnected",
	HealthUnknown:      "Health unknown",
	HealthDue:          "Due",
	HealthMisfired:     "Misfired",
	HealthLost:         "Host lost",
}

// HealthLabel is the display label of a health value.
func HealthLabel(h Health) string {
	if l, ok := healthLabels[h]; ok {
		return l
	}
	return Humanize(string(h))
}

// DeliveryLabel is the display label of a delivery value. subject names the
// one required artifact of the contract ("review.md"); it is empty when the
// contract has several, and the label then speaks of the whole contract.
func DeliveryLabel(d Delivery, subject string) string {
	if subject != "" {
		// A word ("trace") starts the label capitalized, as in the seed's
		// "Trace present"; a file name or pattern ("review.md", "*.json")
		// is case-sensitive and stays as written.
		head := subject
		if !strings.ContainsAny(subject, ".*?[") {
			head = capitalize(subject)
		}
		switch d {
		case DeliveryPassed:
			return head + " present"
		case DeliveryMissing:
			return "No " + subject + " produced"
		case DeliveryPartial:
			return head + " partial"
		case DeliveryInvalid:
			return head + " invalid"
		}
	}
	switch d {
	case DeliveryPassed:
		return "Artifact contract passed"
	case DeliveryPartial:
		return "Artifacts partial"
	case DeliveryMissing:
		return "Artifacts missing"
	case DeliveryInvalid:
		return "Artifacts invalid"
	case DeliveryNotExpected:
		return "No artifacts expected"
	case DeliveryUnknown:
		return "Delivery unknown"
	}
	return Humanize(string(d))
}

// DisplayChain renders a state as one flat chain instead of stacked badges
// (the Unified Entity State Model design's "State display contract"), e.g. "Running · Stalled · Artifacts
// missing". subject is as for DeliveryLabel. judged says whether the
// entity has a runtime of its own to judge (a process, a heartbeat file
// or posted heartbeats): only then is "ok" a finding worth a segment.
//
// Segments, in order:
//  1. the outcome, or the lifecycle while there is none;
//  2. health, omitted when it is ok (or not yet known) on an entity with an
//     outcome, except after a failure: "Failed · Infra OK" is the whole point
//     of the model (a failed run whose infrastructure was fine is an error,
//     not a crash), so ok is shown after failed, aborted and partial_failed;
//     and omitted whenever it is ok on an entity with nothing to judge (a
//     show, a team, a schedule, a play without a pid): "Infra OK" there
//     would claim a check that was never made;
//  3. delivery, omitted when not_expected, when not yet evaluated (unknown),
//     and when passed on a terminal success;
//  4. each finding that sets a severity of its own (FindingSeverity), as
//     its pill says it: "Completed · Leftover processes", so a chain never
//     reads as a success on an entity its findings made critical.
func DisplayChain(s NormalizedState, subject string, judged bool) string {
	if s.Legacy() {
		return "Legacy"
	}
	head := s.Outcome
	if head == "" {
		head = s.Lifecycle
	}
	parts := []string{Humanize(head)}

	ended := s.Outcome != ""
	showHealth := true
	if ended {
		switch s.Health {
		case HealthOK:
			showHealth = s.Outcome == "failed" || s.Outcome == "aborted" || s.Outcome == "partial_failed"
		case HealthUnknown, "":
			showHealth = false
		}
	} else if s.Health == "" {
		showHealth = false
	}
	if !judged && s.Health == HealthOK {
		showHealth = false
	}
	if showHealth {
		parts = append(parts, HealthLabel(s.Health))
	}

	switch {
	case s.Delivery == "", s.Delivery == DeliveryNotExpected, s.Delivery == DeliveryUnknown:
	case s.Delivery == DeliveryPassed && isSuccess(s.Outcome):
	default:
		parts = append(parts, DeliveryLabel(s.Delivery, subject))
	}
	for _, r := range s.Reasons {
		if _, _, ok := FindingSeverity(r.Code, !ended); ok {
			if l := findingLabel(r.Code); !slices.Contains(parts, l) {
				parts = append(parts, l)
			}
		}
	}
	return strings.Join(parts, Separator)
}

func isSuccess(outcome string) bool {
	return outcome == "succeeded" || outcome == "completed" || outcome == "merged"
}

// Humanize turns a vocabulary value into a label: "timed_out" -> "Timed out".
func Humanize(v string) string {
	if v == "" {
		return "Unknown"
	}
	return capitalize(strings.ReplaceAll(v, "_", " "))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
