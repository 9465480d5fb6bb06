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
	// PillFinding is a finding that sets a severity of its own
	// (FindingSeverity): leftover processes after a clean end.
	PillFinding = "finding"
)

// StatePill is one pill of an entity's compound state (the Session Status
// Vocabulary design's "Effective state display"): the lifecycle's pill in
// its own colour, and one pill beside it for each problem of health,
// delivery or a finding, in that problem's colour.
type StatePill struct {
	// Dimension is PillLifecycle, PillHealth, PillDelivery or PillFinding.
	Dimension string
	// Value is the dimension's value ("running", "stalled", "missing"),
	// or the finding's code.
	Value string
	// Label is what the pill says: the display chain's words for it
	// ("Running", "Stalled", "No review.md produced").
	Label string
	// Tone is the pill's colour: what DeriveSeverity gives this dimension
	// alone.
	Tone Tone
}

// LifecycleTone is the colour of the lifecycle's own pill, whatever
// health and delivery say: the design's display map (running blue,
// completed green, failed red, timed out amber, cancelled and aborted
// grey), by the severity cascade over the outcome alone. An open
// lifecycle (running, queued, active, …) is work in progress: info.
func LifecycleTone(outcome string) Tone {
	if outcome == "" {
		return ToneInfo
	}
	return Normalize(outcome, outcome, HealthOK, DeliveryNotExpected, nil, time.Time{}).Tone
}

// HealthTone is the colour of a health value alone (DeriveSeverity with
// no outcome and nothing delivered): stalled red, idle amber, alive blue.
func HealthTone(h Health) Tone {
	_, t := DeriveSeverity("", h, DeliveryNotExpected)
	return t
}

// DeliveryTone is the colour of a delivery value alone.
func DeliveryTone(d Delivery) Tone {
	_, t := DeriveSeverity("", HealthOK, d)
	return t
}

// problem says whether a tone is one a person must look at.
func problem(t Tone) bool { return t == ToneDanger || t == ToneWarning }

// StatePills is the compound state as pills: first the lifecycle (the
// outcome once there is one) in LifecycleTone, then a pill for a health
// that is a problem (HealthTone danger or warning), one for a delivery
// that is a problem, and one for each finding that sets a severity of
// its own (FindingSeverity) where no other pill already shows it. So a
// stalled session is [Running][Stalled] and never a red "Running" alone;
// an orphaned completed one is [Completed][Orphaned]; a healthy ended one
// is its lifecycle's pill alone. The labels are the display chain's
// (HealthLabel, DeliveryLabel, subject as there). A legacy entity has
// one neutral "Legacy" pill.
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
	// Normalize may have turned a partial outcome into partial delivery:
	// s.Delivery is what the cascade judged.
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

// findingLabel is a finding's pill label: its cause, humanized
// ("run.health.leftover_processes" → "Leftover processes").
func findingLabel(code ReasonCode) string {
	c := string(code)
	return Humanize(c[strings.LastIndex(c, ".")+1:])
}
