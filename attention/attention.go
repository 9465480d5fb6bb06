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
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
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
