// Package attention builds the attention queue (docs/reference/state-model.md):
// what needs a person across entity types, clustered by reason code, with
// snoozes and dismissals applied (ADR-0032). The API, `watchdog attention`
// and the watchdog_attention_items gauge share these rules. A harmless
// outcome's own reason makes no item and no code is invented; blind spot: a
// lifecycle alone (a `blocked` play) does not rank an entity, so no item.
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

// DefaultFailureWindow is how long an ended entity stays in the queue by default.
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
var Severities = []state.Severity{state.SeverityCritical, state.SeverityWarning, state.SeverityInfo}

// Attends reports whether an entity of severity s has attention items.
func Attends(s state.Severity) bool {
	return s == state.SeverityCritical || s == state.SeverityWarning || s == state.SeverityInfo
}

// Query is what a caller asks of the queue.
type Query struct {
	// Severities keeps only items of these severities; empty keeps all.
	Severities []state.Severity
	// Limit caps the items returned (0: DefaultLimit); the counts cover all.
	Limit int
	// IncludeDismissed also returns dismissed and snoozed items, marked.
	IncludeDismissed bool
	// Host keeps the items of entities recorded on that host; "" keeps all.
	Host string
	// FailureWindow (0: DefaultFailureWindow) is daemon configuration, not a
	// request parameter, so ParseQuery leaves it out.
	FailureWindow time.Duration
}

// ParseQuery reads the query string of GET /api/attention. Unknown
// parameters are ignored, as browsers and proxies add their own.
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
	// BySeverity counts them per severity, every severity present.
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
	// Summary is the message (else the code's doc line), aged at the read.
	Summary string `json:"summary"`
	// Since is the moment the message speaks of, when it names one.
	Since        unixtime.Time       `json:"since,omitzero"`
	EvidenceRefs []state.EvidenceRef `json:"evidence_refs"`
	// stored is Summary as stored, before a read renders its age.
	stored string
}

// Action is one thing a person can do with an item: a link (Href) or a
// call (Endpoint and Method, with a JSON body of Body).
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
	// ID is stable for a fingerprint, so a client can key rows on it.
	ID          string         `json:"id"`
	Fingerprint string         `json:"fingerprint"`
	Severity    state.Severity `json:"severity"`
	Entity      Entity         `json:"entity"`
	// Status is the entity's lifecycle.
	Status string `json:"status"`
	Reason Reason `json:"reason"`
	// ClusterID groups items of the same reason code across entity types.
	ClusterID string `json:"cluster_id"`
	// ClusterSize counts the cluster's items in the whole selected queue.
	ClusterSize int `json:"cluster_size"`
	// FirstSeenAt is when the condition started: the occurrence dismissals cover.
	FirstSeenAt unixtime.Time `json:"first_seen_at"`
	// LastUpdatedAt is the entity's last update.
	LastUpdatedAt unixtime.Time `json:"last_updated_at"`
	// Heartbeat is the one the entity is judged by, found at the read.
	Heartbeat *state.JudgedHeartbeat `json:"heartbeat,omitempty"`
	// RunbookURL and Do are the code's runbook section and step, set at the read.
	RunbookURL string   `json:"runbook_url,omitempty"`
	Do         string   `json:"do,omitempty"`
	Actions    []Action `json:"actions"`
	// Dismissed is set (only with include_dismissed) on an item a dismissal
	// or snooze hides; SnoozedUntil is zero for a dismissal.
	Dismissed    bool          `json:"dismissed,omitempty"`
	SnoozedUntil unixtime.Time `json:"snoozed_until,omitzero"`
	// DismissedAs is the fingerprint a carried-over dismissal was made on.
	DismissedAs string `json:"dismissed_as,omitempty"`

	// subsumed are the findings the reason subsumes, with onsets (Carries).
	subsumed []subsumedFinding
}

// subsumedFinding is a subsumed finding's fingerprint and onset.
type subsumedFinding struct {
	fingerprint string
	onset       time.Time
}

// MarkDismissed marks it as hidden by d (Acknowledgement).
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
// contain ':', types and reason codes may not.
func ParseFingerprint(fp string) (entityType, entityID string, code state.ReasonCode, err error) {
	i, j := strings.IndexByte(fp, ':'), strings.LastIndexByte(fp, ':')
	if i <= 0 || j <= i+1 || j == len(fp)-1 {
		return "", "", "", fmt.Errorf("fingerprint %q is not <entity_type>:<entity_id>:<reason_code>", fp)
	}
	return fp[:i], fp[i+1 : j], state.ReasonCode(fp[j+1:]), nil
}

// ClusterID is the cluster of a reason code.
func ClusterID(code state.ReasonCode) string { return "cluster_" + string(code) }
