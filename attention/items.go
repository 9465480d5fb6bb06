package attention

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Codes lists the reason codes of an entity's items, each once: the
// transition's reason (left out for a harmless outcome), then the findings
// it does not subsume (one item per cause); else a registered dimension code.
func Codes(entityType, outcome string, transitionCode state.ReasonCode, findings []state.ReasonCode, h state.Health, d state.Delivery) []state.ReasonCode {
	out := make([]state.ReasonCode, 0, len(findings)+1)
	// Kept when its outcome attends, or when it subsumes a finding: a dead
	// process ended harmlessly still has its end's reason, with the evidence.
	kept := transitionCode != "" && (outcome == "" || outcomeAttends(outcome) ||
		slices.ContainsFunc(findings, func(c state.ReasonCode) bool { return state.Subsumes(transitionCode, c) }))
	if kept {
		out = append(out, transitionCode)
	}
	for _, c := range findings {
		if c != "" && !slices.Contains(out, c) && !(kept && state.Subsumes(transitionCode, c)) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		if c, ok := dimensionCode(entityType, h, d); ok {
			out = append(out, c)
		}
	}
	if len(out) == 0 && outcome != "" && outcomeAttends(outcome) {
		// Registered straight into a failing outcome: the queue must explain
		// every critical or warning count, so it gets a code.
		out = append(out, state.SystemOutcomeUnexplained)
	}
	return out
}

// outcomeAttends reports whether an outcome on its own needs attention,
// with per-type outcomes translated as state.Normalize does.
func outcomeAttends(outcome string) bool {
	ns := state.Normalize(outcome, outcome, "", "", nil, time.Time{})
	return Attends(ns.Severity)
}

// dimensionCode finds a registered, non-neutral health or delivery code.
func dimensionCode(entityType string, h state.Health, d state.Delivery) (state.ReasonCode, bool) {
	if sev, _ := state.DeriveSeverity("", h, ""); Attends(sev) {
		for _, ns := range []string{entityType, "run"} {
			if c := state.ReasonCode(ns + ".health." + string(h)); state.Registered(c) {
				return c, true
			}
		}
	}
	if sev, _ := state.DeriveSeverity("", "", d); Attends(sev) {
		for _, ns := range []string{entityType, "run"} {
			if c := state.ReasonCode(ns + ".delivery." + string(d)); state.Registered(c) {
				return c, true
			}
		}
	}
	return "", false
}

// docs maps every registered code to its doc line, for reasons without a message.
var docs = func() map[state.ReasonCode]string {
	m := map[state.ReasonCode]string{}
	for _, r := range state.Reasons() {
		m[r.Code] = r.Doc
	}
	return m
}()

func summaryOf(code state.ReasonCode, message string) string {
	if strings.TrimSpace(message) != "" {
		return message
	}
	if d, ok := docs[code]; ok {
		return capitalize(strings.TrimSuffix(d, "."))
	}
	return string(code)
}

// withExit names how the process ended in a death's summary, when the
// kernel said and the message does not.
func withExit(summary string, code state.ReasonCode, e store.Entity) string {
	if e.Exit == nil || (code != state.RunHealthProcessDead && code != state.SystemHealthProcessDeadNoTerminal && code != state.SystemHealthProcessDeadUnowned) {
		return summary
	}
	if how := e.Exit.How(); !strings.Contains(summary, how) {
		return summary + ": " + e.Exit.Text(e.PID)
	}
	return summary
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ItemsOf returns one entity's current items, dismissals not applied.
func ItemsOf(e store.Entity, now time.Time, window time.Duration) []Item {
	ns := transitions.Normalize(e, now)
	if AgedOut(ns.Outcome, e.Health, e.EndedAt, e.LifecycleAt, e.UpdatedAt, now, window) {
		return nil
	}
	return ItemsFor(e, ns)
}

// ItemsFor returns the items of an entity whose state ns is derived, window
// and dismissals not applied.
func ItemsFor(e store.Entity, ns state.NormalizedState) []Item {
	if ns.Legacy() || !Attends(ns.Severity) {
		return nil
	}
	var transitionCode state.ReasonCode
	if e.TransitionReason != nil {
		transitionCode = e.TransitionReason.Code
	}
	findings := make([]state.ReasonCode, len(e.Reasons))
	for i, r := range e.Reasons {
		findings[i] = r.Code
	}
	codes := Codes(e.Type, ns.Outcome, transitionCode, findings, e.Health, e.Delivery)
	if len(codes) == 0 {
		return nil
	}
	label := e.Label
	if label == "" {
		label = e.Type + "/" + e.ID
	}
	items := make([]Item, 0, len(codes))
	for _, code := range codes {
		reason := Reason{Code: code, EvidenceRefs: []state.EvidenceRef{}}
		var found *state.StateReason
		for i := range ns.Reasons {
			if ns.Reasons[i].Code == code {
				found = &ns.Reasons[i]
				break
			}
		}
		if found != nil {
			reason.Summary = summaryOf(code, found.Message)
			if found.Message != "" {
				reason.Since = found.Since
			}
			if len(found.Evidence) > 0 {
				reason.EvidenceRefs = found.Evidence
			}
		} else {
			reason.Summary = summaryOf(code, "")
		}
		reason.Summary = withExit(reason.Summary, code, e)
		reason.stored = reason.Summary
		first := firstSeen(e, code == transitionCode)
		if found != nil && code != transitionCode && !found.FirstSeen.IsZero() {
			// The finding's own onset: health_since moves with any health change.
			first = found.FirstSeen.Time
		}
		fp := Fingerprint(e.Type, e.ID, code)
		var subsumed []subsumedFinding
		if code == transitionCode {
			for _, r := range e.Reasons {
				// Only a dated finding names its occurrence (Carries).
				if state.Subsumes(code, r.Code) && !r.FirstSeen.IsZero() {
					subsumed = append(subsumed, subsumedFinding{fingerprint: Fingerprint(e.Type, e.ID, r.Code), onset: r.FirstSeen.Time})
				}
			}
		}
		items = append(items, Item{
			ID:            itemID(fp),
			Fingerprint:   fp,
			Severity:      ns.Severity,
			Entity:        Entity{Type: e.Type, ID: e.ID, Label: label},
			Status:        ns.Lifecycle,
			Reason:        reason,
			ClusterID:     ClusterID(code),
			FirstSeenAt:   unixtime.Of(first),
			LastUpdatedAt: unixtime.Of(e.UpdatedAt),
			Actions:       actions(e.Type, e.ID, fp),
			subsumed:      subsumed,
		})
	}
	return items
}

// firstSeen is when an item's condition started: the transition's reason
// with the transition; an undated finding when health last changed.
func firstSeen(e store.Entity, fromTransition bool) time.Time {
	candidates := []time.Time{e.HealthSince, e.LifecycleAt, e.CreatedAt}
	if fromTransition {
		candidates = []time.Time{e.EndedAt, e.LifecycleAt, e.CreatedAt}
	}
	for _, c := range candidates {
		if !c.IsZero() {
			return c
		}
	}
	return e.UpdatedAt
}

func itemID(fp string) string {
	sum := sha256.Sum256([]byte(fp))
	return "attn_" + hex.EncodeToString(sum[:8])
}

// SnoozeFor is how long the Snooze action snoozes an item.
const SnoozeFor = 24 * time.Hour

// At returns the item as served at now: summary aged and the Snooze
// action's `until` filled in; it is not modified.
func (it Item) At(now time.Time) Item {
	if it.Reason.stored == "" {
		it.Reason.stored = it.Reason.Summary
	}
	it.Reason.Summary = state.Render(state.StateReason{Message: it.Reason.stored, Since: it.Reason.Since}, now)
	if it.Actions == nil {
		it.Actions = actions(it.Entity.Type, it.Entity.ID, it.Fingerprint) // Bare dropped them
	}
	acts := make([]Action, len(it.Actions))
	for i, a := range it.Actions {
		if a.ID == "snooze" {
			body := make(map[string]any, len(a.Body)+1)
			for k, v := range a.Body {
				body[k] = v
			}
			body["until"] = unixtime.Of(now.Add(SnoozeFor))
			a.Body = body
		}
		acts[i] = a
	}
	it.Actions = acts
	return it
}

// Bare is the item without its actions, which At rebuilds.
func (it Item) Bare() Item {
	it.Actions = nil
	return it
}

// actions are the descriptors every item offers: open, snooze a day, dismiss.
func actions(typ, id, fp string) []Action {
	return []Action{
		{ID: "inspect", Label: "Open", Kind: "primary", Href: "/api/v1/entities/" + url.PathEscape(typ) + "/" + url.PathEscape(id)},
		{ID: "snooze", Label: "Snooze 1d", Kind: "secondary", Endpoint: SnoozePath, Method: "POST",
			Body: map[string]any{"fingerprint": fp}},
		{ID: "dismiss", Label: "Dismiss", Kind: "secondary", Endpoint: DismissPath, Method: "POST",
			Body: map[string]any{"fingerprint": fp}, RequiresConfirm: true},
	}
}
