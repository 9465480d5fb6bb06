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
// contract's one required artifact, or is empty for the whole contract.
func DeliveryLabel(d Delivery, subject string) string {
	if subject != "" {
		// A word starts the label capitalized; a file name or pattern is
		// case-sensitive and stays as written.
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

// DisplayChain renders a state as one flat chain (state-model.md, ADR-0002).
// judged says the entity has a runtime to judge: only then is "Infra OK" said.
// Health ok still shows after a failure: "Failed · Infra OK" is the model's point.
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
