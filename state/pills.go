package state

import (
	"strings"
	"time"
)

// Pill dimensions: what a StatePill speaks of.
const (
	PillLifecycle = "lifecycle"
	PillHealth    = "health"
	PillDelivery  = "delivery"
	// PillFinding: a finding with a severity of its own (FindingSeverity).
	PillFinding = "finding"
)

// StatePill is one pill of an entity's compound state: the lifecycle's
// pill, and one beside it for each problem, in that problem's colour.
type StatePill struct {
	// Dimension is PillLifecycle, PillHealth, PillDelivery or PillFinding.
	Dimension string
	// Value is the dimension's value, or the finding's code.
	Value string
	// Label is what the pill says, in the display chain's words.
	Label string
	// Tone is what DeriveSeverity gives this dimension alone.
	Tone Tone
}

// LifecycleTone is the colour of the lifecycle's own pill, whatever health
// and delivery say: the cascade over the outcome alone; open work is info.
func LifecycleTone(outcome string) Tone {
	if outcome == "" {
		return ToneInfo
	}
	return Normalize(outcome, outcome, HealthOK, DeliveryNotExpected, nil, time.Time{}).Tone
}

// HealthTone is the colour of a health value alone.
func HealthTone(h Health) Tone {
	_, t := DeriveSeverity("", h, DeliveryNotExpected)
	return t
}

// DeliveryTone is the colour of a delivery value alone.
func DeliveryTone(d Delivery) Tone {
	_, t := DeriveSeverity("", HealthOK, d)
	return t
}

func problem(t Tone) bool { return t == ToneDanger || t == ToneWarning }

// StatePills is the compound state as pills (ADR-0050): the lifecycle,
// then one for each health, delivery or finding problem not already shown,
// so a stalled session is [Running][Stalled], never a red "Running". A
// legacy entity has one neutral "Legacy" pill.
func StatePills(s NormalizedState, subject string) []StatePill {
	if s.Legacy() {
		return []StatePill{{Dimension: PillLifecycle, Value: LifecycleLegacy, Label: "Legacy", Tone: ToneNeutral}}
	}
	head := s.Outcome
	if head == "" {
		head = s.Lifecycle
	}
	out := []StatePill{{Dimension: PillLifecycle, Value: head, Label: Humanize(head), Tone: LifecycleTone(s.Outcome)}}
	if t := HealthTone(s.Health); problem(t) {
		out = append(out, StatePill{Dimension: PillHealth, Value: string(s.Health), Label: HealthLabel(s.Health), Tone: t})
	}
	// s.Delivery is what the cascade judged (a partial outcome included).
	if t := DeliveryTone(s.Delivery); problem(t) {
		out = append(out, StatePill{Dimension: PillDelivery, Value: string(s.Delivery), Label: DeliveryLabel(s.Delivery, subject), Tone: t})
	}
	for _, r := range s.Reasons {
		_, t, ok := FindingSeverity(r.Code, s.Outcome == "")
		if !ok || shown(out, string(r.Code)) {
			continue
		}
		out = append(out, StatePill{Dimension: PillFinding, Value: string(r.Code), Label: findingLabel(r.Code), Tone: t})
	}
	return out
}

func shown(pills []StatePill, value string) bool {
	for _, p := range pills {
		if p.Value == value {
			return true
		}
	}
	return false
}

// findingLabel is a finding's pill label: its cause, humanized.
func findingLabel(code ReasonCode) string {
	c := string(code)
	return Humanize(c[strings.LastIndex(c, ".")+1:])
}
