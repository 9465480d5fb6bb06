// Package attention builds the attention queue of the Attention Queue design
// (docs/reference/state-model.md, The attention queue): one
// flat, prioritised list of what needs a person, across every entity type,
// clustered by reason code, with snoozes and dismissals applied. The HTTP
// API (GET /api/attention), `watchdog attention` and the
// watchdog_attention_items gauge all use the rules here, so the three never
// disagree.
//
// # Which items exist
//
// An item is one (entity, reason code) pair of a non-legacy entity whose
// derived severity (the Unified Entity State Model design's cascade, transitions.Normalize) is critical, warning or
// info. Its reason codes are those of the entity's NormalizedState: the
// reason of the transition that brought it to its lifecycle, then the
// probe's findings that reason does not subsume (state.Subsumes: one item
// per cause), each code once. Every item of an entity carries the
// entity's severity: severity is a property of the entity's state, and the
// reasons explain it. The transition's reason is left out when the outcome
// itself is harmless (completed, succeeded, merged, cancelled): a
// completed run with missing artifacts is in the queue for
// run.delivery.missing, not for "exited with code 0".
//
// An entity that is non-neutral but carries no reason (a probe verdict
// written without a finding, or a registration with a health already set)
// gets one item only if its health or delivery value has a registered code
// of its own (`<type>.health.<value>`, then `run.health.<value>`, then the
// same for delivery) that is itself non-neutral, or, when it was registered
// straight into a failing outcome, `system.outcome.unexplained`: the queue
// never invents a code outside the registry. A plainly running process (health `running`,
// no finding) has no such code and is, rightly, not an attention item.
//
// An entity that reached an outcome (a terminal state, or an outcome state
// such as a show's `failed`) leaves the queue failure_window (24h) after it
// got there (ended_at, else the time of its last transition): failed and
// timed-out work ages out, and the probe stops looking at such entities
// after the same window, so their findings would be stale anyway. The
// exception is an orphan (Lingers): its process still lives, its
// condition is not over, and it stays in the queue (and under the probe)
// whatever its age, until the process is gone.
//
// Items are sorted most severe first, then most recently updated. A
// cluster (cluster_<reason_code>) spans entity types; its size, the total
// and by_severity count every item the request selects (severity filter
// and dismissals applied), never just the page the limit cuts.
//
// Blind spot: severity is the Unified Entity State Model design's cascade over outcome, health and
// delivery only, so an entity whose lifecycle alone signals trouble but
// that has no outcome and a healthy or unknown health (a play or show in
// `blocked`, say) is neutral and has no item, although the Attention Queue design listed
// blocked plays as warnings. The reaper's blocking reasons surface once
// the cascade ranks that lifecycle.
//
// # Dismissals
//
// A dismissal or snooze covers one occurrence: it hides the item with the
// same fingerprint (`<entity_type>:<entity_id>:<reason_code>`) and the
// same first_seen_at as the item it was made on, while its snooze has not
// expired (a permanent dismissal never expires) and, when it was recorded
// with clear_on_status_change, while the entity's lifecycle is still the
// one it had at dismissal. When the item leaves the queue (its condition
// cleared) and comes back, first_seen_at is new (a finding's is the time
// health last changed, a transition's the time of the transition), so the
// recurrence is a new item and surfaces at once. All of it is decided at
// read time, so vacuum is housekeeping and never changes what the queue
// shows. A new reason code is a new fingerprint and surfaces at once,
// with one exception: an incident keeps its acknowledgement. A dismissal
// of a finding also hides the item of the end that subsumes it, for the
// same occurrence (Carries, ADR-0032); Acknowledgement is the one rule
// every surface applies.
package attention

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// DefaultFailureWindow is how long an entity with an outcome stays in the
// queue when the caller sets no window (config thresholds.failure_window).
const DefaultFailureWindow = 24 * time.Hour

// Limits of the `limit` query parameter.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Endpoints the item actions point at.
const (
	SnoozePath  = "/api/attention/snooze"
	DismissPath = "/api/attention/dismiss"
)

// Severities are the severities that produce items, most severe first.
// Neutral entities never need attention.
var Severities = []state.Severity{state.SeverityCritical, state.SeverityWarning, state.SeverityInfo}

// Attends reports whether an entity of severity s has attention items.
func Attends(s state.Severity) bool {
	return s == state.SeverityCritical || s == state.SeverityWarning || s == state.SeverityInfo
}

// Query is what a caller asks of the queue.
type Query struct {
	// Severities keeps only items of these severities; empty keeps all.
	Severities []state.Severity
	// Limit caps the items returned (total and by_severity still count the
	// whole queue); 0 means DefaultLimit.
	Limit int
	// IncludeDismissed also returns dismissed and snoozed items, marked.
	IncludeDismissed bool
	// Host keeps the items of entities recorded on that host (`host=`, a
	// fleet's one view from any daemon); "" keeps all.
	Host string
	// FailureWindow is how long an entity with an outcome stays in the
	// queue; 0 means DefaultFailureWindow. It is daemon configuration, not
	// a request parameter, so Values and ParseQuery leave it out.
	FailureWindow time.Duration
}

// ParseQuery reads the query string of GET /api/attention:
// `severity=critical,warning` (critical, warning, info), `limit` (1 to
// MaxLimit, default DefaultLimit) and `include_dismissed` (a boolean).
// Unknown parameters are ignored, as browsers and proxies add their own.
func ParseQuery(v url.Values) (Query, error) {
	q := Query{Limit: DefaultLimit}
	if s := strings.TrimSpace(v.Get("severity")); s != "" {
		sevs, err := state.ParseSeverities(s, Severities)
		if err != nil {
			return Query{}, fmt.Errorf("severity %w", err)
		}
		q.Severities = sevs
	}
	if s := strings.TrimSpace(v.Get("limit")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return Query{}, fmt.Errorf("limit %q must be a whole number from 1 to %d", s, MaxLimit)
		}
		q.Limit = n
	}
	q.Host = strings.TrimSpace(v.Get("host"))
	if s := strings.TrimSpace(v.Get("include_dismissed")); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return Query{}, fmt.Errorf("include_dismissed %q must be true or false", s)
		}
		q.IncludeDismissed = b
	}
	return q, nil
}

// Queue is the body of GET /api/attention and `watchdog attention --json`.
type Queue struct {
	GeneratedAt unixtime.Time `json:"generated_at"`
	// Total counts every item the query selects, before the limit.
	Total int `json:"total"`
	// BySeverity counts the same items per severity; every attention
	// severity is present, zero or not.
	BySeverity map[state.Severity]int `json:"by_severity"`
	Items      []Item                 `json:"items"`
}

// Entity names an item's entity.
type Entity struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Label is the registered label, or TYPE/ID when none was given.
	Label string `json:"label"`
}

// Reason is why an item is in the queue.
type Reason struct {
	Code state.ReasonCode `json:"code"`
	// Summary is the reason's message, or the registry's doc line of the
	// code when the message is empty, rendered when the queue is read:
	// with the age of Since at that moment (state.Render).
	Summary string `json:"summary"`
	// Since is the moment the message speaks of, when it names one.
	Since        unixtime.Time       `json:"since,omitzero"`
	EvidenceRefs []state.EvidenceRef `json:"evidence_refs"`
	// stored is Summary as stored, before a read renders its age.
	stored string
}

// Action is one thing a person can do with an item, in the shape of
// the Attention Queue design's EntityAction descriptor: a link (Href) or a call (Endpoint and
// Method, with a JSON body of Body).
type Action struct {
	ID              string         `json:"id"`
	Label           string         `json:"label"`
	Kind            string         `json:"kind"`
	Href            string         `json:"href,omitempty"`
	Endpoint        string         `json:"endpoint,omitempty"`
	Method          string         `json:"method,omitempty"`
	Body            map[string]any `json:"body,omitempty"`
	RequiresConfirm bool           `json:"requires_confirm"`
}

// Item is one attention item.
type Item struct {
	// ID is stable for a fingerprint ("attn_" and a hash of it), so a
	// client can key rows on it across polls.
	ID          string         `json:"id"`
	Fingerprint string         `json:"fingerprint"`
	Severity    state.Severity `json:"severity"`
	Entity      Entity         `json:"entity"`
	// Status is the entity's lifecycle.
	Status string `json:"status"`
	Reason Reason `json:"reason"`
	// ClusterID groups items of the same reason code across entity types.
	ClusterID string `json:"cluster_id"`
	// ClusterSize counts the cluster's items in the whole selected queue,
	// not only on this page.
	ClusterSize int `json:"cluster_size"`
	// FirstSeenAt is when the condition started: the end (or the last
	// transition) for the transition's own reason, else the time health
	// last changed, else the last transition, else registration.
	FirstSeenAt unixtime.Time `json:"first_seen_at"`
	// LastUpdatedAt is the entity's last update.
	LastUpdatedAt unixtime.Time `json:"last_updated_at"`
	// Heartbeat is the heartbeat the entity is judged by, as the entity
	// read shows it (a heartbeat file's mtime or the posted heartbeat,
	// whichever is later), left out when the entity has none. It is found
	// when the queue is read (FillHeartbeats), never derived with the
	// item nor stored.
	Heartbeat *state.JudgedHeartbeat `json:"heartbeat,omitempty"`
	// RunbookURL is the reason code's section of the runbook (the
	// published alertmanager.runbook_url's, else the daemon's own
	// /runbook) and Do its one line of what to do, as the page and the
	// pushed alerts show them; both left out when the runbook has no
	// section for the code. Set when the queue is read (FillRunbook),
	// since a reload may move the runbook.
	RunbookURL string   `json:"runbook_url,omitempty"`
	Do         string   `json:"do,omitempty"`
	Actions    []Action `json:"actions"`
	// Dismissed is set (only with include_dismissed) on an item a
	// dismissal or snooze currently hides; SnoozedUntil is then the
	// snooze's end, zero (left out) for a dismissal.
	Dismissed    bool          `json:"dismissed,omitempty"`
	SnoozedUntil unixtime.Time `json:"snoozed_until,omitzero"`
	// DismissedAs is set (with Dismissed) when the dismissal or snooze
	// that hides the item was made on another fingerprint: a finding its
	// reason subsumes, in the same occurrence, acknowledged before (or
	// after) the end that escalated it (Carries). A client that snoozed
	// the finding finds its acknowledgement here.
	DismissedAs string `json:"dismissed_as,omitempty"`

	// subsumed are the findings the item's reason subsumes, each in the
	// occurrence the entity holds it: where an acknowledgement of the
	// finding's own item carries over to this one (Carries).
	subsumed []subsumedFinding
}

// subsumedFinding is a finding an item's reason subsumes: the fingerprint
// its own item had, and its onset (StateReason.FirstSeen), the occurrence
// a dismissal of that item recorded.
type subsumedFinding struct {
	fingerprint string
	onset       time.Time
}

// MarkDismissed marks it, served with include_dismissed, as hidden by d
// (Acknowledgement): Dismissed, the snooze's end, and the fingerprint d
// was made on when it is carried over from another.
func (it *Item) MarkDismissed(d store.Dismissal) {
	it.Dismissed, it.SnoozedUntil = true, unixtime.Of(d.SnoozedUntil)
	if d.Fingerprint != it.Fingerprint {
		it.DismissedAs = d.Fingerprint
	}
}

// Fingerprint is an item's identity for snooze and dismiss.
func Fingerprint(entityType, entityID string, code state.ReasonCode) string {
	return entityType + ":" + entityID + ":" + string(code)
}

// ParseFingerprint splits a fingerprint into its parts. Entity ids may
// contain ':', types and reason codes may not, so the id is everything
// between the first and the last colon.
func ParseFingerprint(fp string) (entityType, entityID string, code state.ReasonCode, err error) {
	i, j := strings.IndexByte(fp, ':'), strings.LastIndexByte(fp, ':')
	if i <= 0 || j <= i+1 || j == len(fp)-1 {
		return "", "", "", fmt.Errorf("fingerprint %q is not <entity_type>:<entity_id>:<reason_code>", fp)
	}
	return fp[:i], fp[i+1 : j], state.ReasonCode(fp[j+1:]), nil
}

// ClusterID is the cluster of a reason code.
func ClusterID(code state.ReasonCode) string { return "cluster_" + string(code) }

// AgedOut is the failure window's rule, stated once: an entity with an
// outcome that got there before the window began (Since) has aged out,
// and its items have left the queue. When it got there is the first
// non-zero of endedAt, lifecycleAt and updatedAt. An entity without an
// outcome (still open) never ages out.
//
// The store applies the same rule in SQL, taking Since's cut-off as its
// parameter: AttentionCandidates reads only what may still be inside the
// window (COALESCE(ended_at, lifecycle_at, updated_at) >= since).
func AgedOut(outcome string, endedAt, lifecycleAt, updatedAt, now time.Time, window time.Duration) bool {
	if outcome == "" {
		return false
	}
	return Arrived(endedAt, lifecycleAt, updatedAt).Before(Since(now, window))
}

// Lingers reports whether an entity with an outcome keeps its items past
// the failure window: its process is still alive after its end was
// recorded (health orphaned), so its condition is not over, whatever its
// age. The probe keeps judging such an entity (store.Filter.EndedSince),
// so the health changes, and the items age out by the window's rule, once
// the process is gone.
func Lingers(outcome string, h state.Health) bool {
	return outcome != "" && h == state.HealthOrphaned
}

// Arrived is when an entity reached its outcome, as AgedOut reckons it:
// the first non-zero of endedAt, lifecycleAt and updatedAt. The live view
// keeps it per entity and orders the entities with an outcome by it, so
// the failure window's cut is one binary search.
func Arrived(endedAt, lifecycleAt, updatedAt time.Time) time.Time {
	if !endedAt.IsZero() {
		return endedAt
	}
	if !lifecycleAt.IsZero() {
		return lifecycleAt
	}
	return updatedAt
}

// Hides reports whether dismissal d hides it (an item of d's
// fingerprint): its snooze has not expired (or it is a permanent
// dismissal), it is the occurrence d was made on (the same first_seen_at;
// a dismissal from before occurrences were recorded covers any), and
// either d ignores status changes or the entity's status is still the one
// it was recorded with.
func Hides(d store.Dismissal, it *Item, now time.Time) bool {
	if !d.SnoozedUntil.IsZero() && !d.SnoozedUntil.After(now) {
		return false
	}
	if !d.Occurrence.IsZero() && !SameOccurrence(d.Occurrence, it.FirstSeenAt.Time) {
		return false
	}
	return !d.ClearOnStatusChange || d.StatusAtDismissal == it.Status
}

// Carries reports whether dismissal d, made on the item of a finding that
// it's reason subsumes (state.Subsumes), hides it at now: an incident
// keeps its acknowledgement when the watchdog ends the entity for it
// (a snoozed process_dead becomes process_dead_no_terminal, a dismissed
// orphan is reaped as phantom_orphaned, a snoozed delivery finding ends
// in a failed artifact contract). It is the same occurrence when
//
//   - the entity still holds the finding d names, dated (FirstSeen) by
//     d's occurrence: the death, orphaning or contract d was made on, not
//     a later one (a process re-registered that died again has a new
//     onset, so its end is a new item);
//   - the finding began no later than the transition (it.FirstSeenAt):
//     the end was based on it;
//   - the snooze has not expired (a permanent dismissal never does).
//
// clear_on_status_change does not end a carried acknowledgement: the
// status change it would catch is the escalation itself, the incident's
// own consequence, and any other change of the entity moves what the
// rule compares (a later transition brings its own reason, a recovery
// clears the finding or gives it a new onset). It is not compared with
// the time of the dismissal either: a snooze read before the end and
// written after it is still the incident's. A row without an occurrence
// (from before migration 0006) or a finding without an onset cannot
// prove the occurrence and carries nothing. The vacuum keeps a row
// whose finding the entity still holds in that occurrence, so it never
// deletes what carries.
func Carries(d store.Dismissal, it *Item, now time.Time) bool {
	if !d.SnoozedUntil.IsZero() && !d.SnoozedUntil.After(now) {
		return false
	}
	if d.Occurrence.IsZero() {
		return false
	}
	i := slices.IndexFunc(it.subsumed, func(s subsumedFinding) bool { return s.fingerprint == d.Fingerprint })
	if i < 0 {
		return false
	}
	onset, at := it.subsumed[i].onset, it.FirstSeenAt.Time
	return SameOccurrence(d.Occurrence, onset) && (!onset.After(at) || SameOccurrence(onset, at))
}

// Acknowledgement returns the dismissal or snooze that hides it at now,
// if any: its own (the same fingerprint, Hides), else one made on a
// finding its reason subsumes, carried over (Carries). The one rule of
// what an acknowledgement hides: the queue (Assemble), the live view's
// queue and counts, and so the page, the gauges and the Alertmanager push
// all ask it.
func Acknowledgement(dismissals map[string]store.Dismissal, it *Item, now time.Time) (store.Dismissal, bool) {
	if len(dismissals) == 0 {
		return store.Dismissal{}, false
	}
	if d, ok := dismissals[it.Fingerprint]; ok && Hides(d, it, now) {
		return d, true
	}
	for _, s := range it.subsumed {
		if d, ok := dismissals[s.fingerprint]; ok && Carries(d, it, now) {
			return d, true
		}
	}
	return store.Dismissal{}, false
}

// SubsumedFingerprints are the fingerprints of the findings it's reason
// subsumes, whose acknowledgements may carry over to it (Carries): the
// live view indexes its items by them too, to count what a dismissal
// hides.
func (it *Item) SubsumedFingerprints() []string {
	out := make([]string, len(it.subsumed))
	for i, s := range it.subsumed {
		out[i] = s.fingerprint
	}
	return out
}

// SameOccurrence reports whether two first_seen_at moments name the same
// occurrence. They come from the same stored column through the same
// conversion; the tolerance only absorbs a float's last bit.
func SameOccurrence(a, b time.Time) bool {
	d := a.Sub(b)
	return d < time.Millisecond && d > -time.Millisecond
}

// Codes lists the reason codes of an entity's items, each once, in order:
// the transition's reason first, then the probe's findings that it does
// not subsume (state.Subsumes: one item per cause). The
// transition's reason is left out when the entity's outcome is itself
// harmless (succeeded, completed, merged, cancelled): a completed run
// whose artifacts are missing needs attention for the missing artifacts,
// not for "exited with code 0". With no code left, it falls back to the
// entity's own health or delivery code when one is registered (see the
// package doc).
func Codes(entityType, outcome string, transitionCode state.ReasonCode, findings []state.ReasonCode, h state.Health, d state.Delivery) []state.ReasonCode {
	out := make([]state.ReasonCode, 0, len(findings)+1)
	// The transition's reason is an item when its outcome attends, or when
	// it subsumes one of the findings (a dead process ended in a harmless
	// outcome still reads process_dead: its one item is the end's reason,
	// which carries the evidence, not a bare dimension item).
	kept := transitionCode != "" && (outcome == "" || outcomeAttends(outcome) ||
		slices.ContainsFunc(findings, func(c state.ReasonCode) bool { return state.Subsumes(transitionCode, c) }))
	if kept {
		out = append(out, transitionCode)
	}
	for _, c := range findings {
		// A finding the kept transition's reason subsumes is the same
		// cause: one item (state.Subsumes).
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
		// Registered straight into a failing outcome (an import, a
		// backfill): no transition ever gave a reason, but the entity
		// counts as critical or warning, and the queue must explain every
		// such count rather than leave it to Grafana alone.
		out = append(out, state.SystemOutcomeUnexplained)
	}
	return out
}

// outcomeAttends reports whether an outcome on its own needs attention
// (failed, aborted, timed_out, skipped, partial, ...). Per-type outcomes
// outside the shared vocabulary go through the same translation as
// state.Normalize (partial is partial delivery, partial_failed a failure).
func outcomeAttends(outcome string) bool {
	ns := state.Normalize(outcome, outcome, "", "", nil, time.Time{})
	return Attends(ns.Severity)
}

// dimensionCode finds a registered, non-neutral code naming an entity's
// health or delivery value.
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

// docs maps every registered code to its doc line, the summary of an item
// whose reason has no message.
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

// withExit names how the process ended in the summary of a death, when the
// kernel said and the message does not already.
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

// ItemsOf returns every current item of one entity, dismissals not
// applied and cluster sizes not set: what snooze and dismiss check a
// fingerprint against.
func ItemsOf(e store.Entity, now time.Time, window time.Duration) []Item {
	ns := transitions.Normalize(e, now)
	if !Lingers(ns.Outcome, e.Health) && AgedOut(ns.Outcome, e.EndedAt, e.LifecycleAt, e.UpdatedAt, now, window) {
		return nil
	}
	return ItemsFor(e, ns)
}

// ItemsFor returns the items of an entity whose state ns was derived
// already (transitions.Normalize), the failure window and dismissals not
// applied: the live view computes them once per change and applies the
// window (AgedOut) when it is read.
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
			// The finding's own onset: health_since moves with any change
			// of health, and a delivery finding has nothing to do with it.
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

// firstSeen is when an item's condition started. The transition's reason
// started with the transition (the end, for a terminal one); a probe
// finding carries its own onset (StateReason.FirstSeen), and one stored
// before findings were dated started when health last changed.
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

// At returns the item as a reader is served it at now: its summary
// rendered with the age of its Since (state.Render), and its Snooze
// action's body carrying a ready `until` (now + SnoozeFor, Unix seconds),
// so a client sends the action exactly as advertised. Items are derived
// once per change and kept; everything that depends on the moment of the
// read is filled here. it is not modified.
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

// Bare is the item without its actions, which are the same three for
// every item and a function of its entity and fingerprint: what a holder
// of many items (the live view) keeps, about 1 KB less each. At builds
// them again, so the read is the same.
func (it Item) Bare() Item {
	it.Actions = nil
	return it
}

// actions are the descriptors every item offers: open the entity, snooze
// it for a day, dismiss it. Snooze's `until` is filled when the queue is
// read (Item.At): a day from the read, not from the change that made the
// item.
func actions(typ, id, fp string) []Action {
	return []Action{
		{ID: "inspect", Label: "Open", Kind: "primary", Href: "/api/v1/entities/" + url.PathEscape(typ) + "/" + url.PathEscape(id)},
		{ID: "snooze", Label: "Snooze 1d", Kind: "secondary", Endpoint: SnoozePath, Method: "POST",
			Body: map[string]any{"fingerprint": fp}},
		{ID: "dismiss", Label: "Dismiss", Kind: "secondary", Endpoint: DismissPath, Method: "POST",
			Body: map[string]any{"fingerprint": fp}, RequiresConfirm: true},
	}
}

// Build assembles the queue from entities (any subset that includes every
// entity that may have items; others are skipped), the dismissals keyed by
// fingerprint, and the query (its Host keeps that host's entities only,
// as the live view's queue does: the entities must then carry their
// HostID, which the stores' AttentionCandidates do not read). Items are sorted most severe first, then most
// recently updated, then by fingerprint, so the order is stable across
// polls; cluster sizes, the total and by_severity count the whole selected
// queue before the limit.
func Build(entities []store.Entity, dismissals map[string]store.Dismissal, q Query, now time.Time) Queue {
	var all []Item
	for _, e := range entities {
		if q.Host != "" && e.HostID != q.Host {
			continue
		}
		all = append(all, ItemsOf(e, now, q.FailureWindow)...)
	}
	return Assemble(all, dismissals, q, now)
}

// Key is an item's place in the queue's order: most severe first, then
// most recently updated, then by fingerprint, so the order is total and
// stable across polls. Assemble sorts by it, and the live view keeps its
// items in it as entities change.
type Key struct {
	rank        int
	updated     int64
	fingerprint string
}

// KeyOf is it's place in the queue's order.
func KeyOf(it *Item) Key {
	return Key{rank: it.Severity.Rank(), updated: it.LastUpdatedAt.UnixNano(), fingerprint: it.Fingerprint}
}

// Fingerprint is the fingerprint of k's item.
func (k Key) Fingerprint() string { return k.fingerprint }

// Compare orders k before o (-1), after it (1) or equal (0, the same
// fingerprint).
func (k Key) Compare(o Key) int {
	if k.rank != o.rank {
		return cmp.Compare(k.rank, o.rank)
	}
	if k.updated != o.updated {
		return -cmp.Compare(k.updated, o.updated)
	}
	return strings.Compare(k.fingerprint, o.fingerprint)
}

// Assemble is Build from the items already found (ItemsOf, or the live
// view's ItemsFor of the entities inside the failure window): the query's
// severity filter and the dismissals applied, sorted, counted and cut to
// the limit. all is not modified.
func Assemble(all []Item, dismissals map[string]store.Dismissal, q Query, now time.Time) Queue {
	out := Queue{GeneratedAt: unixtime.Of(now), BySeverity: map[state.Severity]int{}, Items: []Item{}}
	for _, s := range Severities {
		out.BySeverity[s] = 0
	}
	// The selection is sorted by index: items are large, and only the
	// page is copied out.
	type sel struct {
		i         int
		key       Key
		dismissal *store.Dismissal
	}
	picked := make([]sel, 0, len(all))
	clusters := map[string]int{}
	for i := range all {
		it := &all[i]
		if len(q.Severities) > 0 && !slices.Contains(q.Severities, it.Severity) {
			continue
		}
		s := sel{i: i, key: KeyOf(it)}
		if d, ok := Acknowledgement(dismissals, it, now); ok {
			if !q.IncludeDismissed {
				continue
			}
			s.dismissal = &d
		}
		picked = append(picked, s)
		clusters[it.ClusterID]++
		out.BySeverity[it.Severity]++
	}
	slices.SortFunc(picked, func(a, b sel) int { return a.key.Compare(b.key) })
	out.Total = len(picked)
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(picked) > limit {
		picked = picked[:limit]
	}
	for _, s := range picked {
		it := all[s.i].At(now)
		it.ClusterSize = clusters[it.ClusterID]
		if s.dismissal != nil {
			it.MarkDismissed(*s.dismissal)
		}
		out.Items = append(out.Items, it)
	}
	return out
}

// Source is what Read reads: the entities that may have items and the
// dismissals (sqlite.Store; the API's store).
type Source interface {
	AttentionCandidates(ctx context.Context, since time.Time) ([]store.Entity, error)
	Dismissals(ctx context.Context) (map[string]store.Dismissal, error)
}

// Read is the queue the API serves and `watchdog attention` prints: the
// candidates inside q's failure window and every dismissal, built at now.
// The store's errors pass as they are: they name their query already, and
// the command prints them unchanged.
func Read(ctx context.Context, src Source, q Query, now time.Time) (Queue, error) {
	list, err := src.AttentionCandidates(ctx, Since(now, q.FailureWindow))
	if err != nil {
		return Queue{}, err
	}
	dismissals, err := src.Dismissals(ctx)
	if err != nil {
		return Queue{}, err
	}
	return Build(list, dismissals, q, now), nil
}

// Since is the start of the failure window at now (window 0 means
// DefaultFailureWindow): the cut-off of AgedOut, and the since argument of
// the store's queries that apply the same rule (sqlite.Store's
// AttentionCandidates, which reads only the entities that may have items,
// so a poll reads a small part of a large store).
func Since(now time.Time, window time.Duration) time.Time {
	if window <= 0 {
		window = DefaultFailureWindow
	}
	return now.Add(-window)
}
