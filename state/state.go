// Package state is watchdog's pure model of an entity's condition (no I/O,
// no clock): dimensions, reasons and evidence, severity and tone, the
// display chain and the reason codes (docs/reference/state-model.md).
package state

import (
	"slices"
	"time"

	"watchdog/internal/unixtime"
)

// Health says whether an entity's runtime (its process) is okay.
type Health string

// Health values (docs/reference/state-model.md, Dimensions).
const (
	HealthOK           Health = "ok"
	HealthRunning      Health = "running"
	HealthIdle         Health = "idle"
	HealthDegraded     Health = "degraded"
	HealthStalled      Health = "stalled"
	HealthProcessDead  Health = "process_dead"
	HealthOrphaned     Health = "orphaned"
	HealthDisconnected Health = "disconnected"
	HealthUnknown      Health = "unknown"
	HealthDue          Health = "due"
	HealthMisfired     Health = "misfired"
	// HealthLost: the host's daemon is silent past host_lost_after.
	HealthLost Health = "lost"
)

// Healths lists every Health value, in the order of docs/reference/state-model.md.
var Healths = []Health{
	HealthOK, HealthRunning, HealthIdle, HealthDegraded, HealthStalled,
	HealthProcessDead, HealthOrphaned, HealthDisconnected, HealthUnknown,
	HealthDue, HealthMisfired, HealthLost,
}

// Delivery says whether an entity produced the outputs it was required to.
type Delivery string

// Delivery values (docs/reference/state-model.md, Dimensions).
const (
	DeliveryPassed      Delivery = "passed"
	DeliveryPartial     Delivery = "partial"
	DeliveryMissing     Delivery = "missing"
	DeliveryInvalid     Delivery = "invalid"
	DeliveryNotExpected Delivery = "not_expected"
	DeliveryUnknown     Delivery = "unknown"
)

// Deliveries lists every Delivery value.
var Deliveries = []Delivery{
	DeliveryPassed, DeliveryPartial, DeliveryMissing, DeliveryInvalid,
	DeliveryNotExpected, DeliveryUnknown,
}

// Outcomes is the shared outcome vocabulary; types add their own terminals.
var Outcomes = []string{
	"succeeded", "completed", "merged", "failed", "timed_out",
	"cancelled", "aborted", "skipped", "unknown",
}

// Severity decides placement: attention queue inclusion and sort order.
type Severity string

// Severity values, most severe first.
const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
	SeverityNeutral  Severity = "neutral"
)

// Severities lists every Severity, most severe first.
var Severities = []Severity{SeverityCritical, SeverityWarning, SeverityInfo, SeverityNeutral}

// Rank orders severities for sorting; anything unrecognised sorts last.
func (s Severity) Rank() int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return len(Severities)
}

// ParseSeverity accepts a severity name and reports whether it is one.
func ParseSeverity(s string) (Severity, bool) {
	for _, v := range Severities {
		if string(v) == s {
			return v, true
		}
	}
	return "", false
}

// Tone decides visual treatment (badge colour).
type Tone string

// Tone values.
const (
	ToneDanger  Tone = "danger"
	ToneWarning Tone = "warning"
	ToneInfo    Tone = "info"
	ToneSuccess Tone = "success"
	ToneNeutral Tone = "neutral"
)

// Tones lists every Tone.
var Tones = []Tone{ToneDanger, ToneWarning, ToneInfo, ToneSuccess, ToneNeutral}

// Evidence kinds (docs/reference/state-model.md, Dimensions).
const (
	EvidenceMessage        = "message"
	EvidenceUserStatement  = "user_statement"
	EvidenceToolResult     = "tool_result"
	EvidenceArtifact       = "artifact"
	EvidenceURL            = "url"
	EvidenceFile           = "file"
	EvidenceModelInference = "model_inference"
	EvidenceHumanAssertion = "human_assertion"
)

// EvidenceKinds lists every accepted EvidenceRef.Kind.
var EvidenceKinds = []string{
	EvidenceMessage, EvidenceUserStatement, EvidenceToolResult, EvidenceArtifact,
	EvidenceURL, EvidenceFile, EvidenceModelInference, EvidenceHumanAssertion,
}

// ValidEvidenceKind reports whether k is one of EvidenceKinds.
func ValidEvidenceKind(k string) bool {
	for _, v := range EvidenceKinds {
		if v == k {
			return true
		}
	}
	return false
}

// EvidenceRef points at the proof behind a reason.
type EvidenceRef struct {
	Kind        string        `json:"kind"`
	ID          string        `json:"id,omitempty"`
	SessionID   string        `json:"session_id,omitempty"`
	MessageID   string        `json:"message_id,omitempty"`
	ToolCallID  string        `json:"tool_call_id,omitempty"`
	ArtifactID  string        `json:"artifact_id,omitempty"`
	Path        string        `json:"path,omitempty"`
	URL         string        `json:"url,omitempty"`
	Repo        string        `json:"repo,omitempty"`
	CommitSHA   string        `json:"commit_sha,omitempty"`
	ContentHash string        `json:"content_hash,omitempty"`
	FetchedAt   unixtime.Time `json:"fetched_at,omitzero"`
	Detail      string        `json:"detail,omitempty"`
	// Times are the moments Detail writes, so a reader shows their ages while
	// the stored detail keeps its words.
	Times []EvidenceTime `json:"times,omitempty"`
}

// EvidenceTime is one moment an evidence detail writes, and its text there.
type EvidenceTime struct {
	Text string        `json:"text"`
	At   unixtime.Time `json:"at"`
}

// TimeOf is the EvidenceTime of t written as text.
func TimeOf(text string, t time.Time) EvidenceTime {
	return EvidenceTime{Text: text, At: unixtime.Of(t)}
}

// Claim statuses of a StateReason.
const (
	ClaimObserved = "observed"
	ClaimInferred = "inferred"
)

// StateReason explains one dimension of an entity's state, with evidence.
type StateReason struct {
	Code        ReasonCode    `json:"code"`
	Message     string        `json:"message"`
	ClaimStatus string        `json:"claim_status"`
	Confidence  float64       `json:"confidence"`
	EntityType  string        `json:"entity_type,omitempty"`
	EntityID    string        `json:"entity_id,omitempty"`
	Evidence    []EvidenceRef `json:"evidence"`
	// Since is the moment the message speaks of: stored as a moment, never an
	// age, so an unchanged host rewrites nothing.
	Since unixtime.Time `json:"since,omitzero"`
	// FirstSeen is the current occurrence's onset, kept while it persists.
	FirstSeen unixtime.Time `json:"first_seen_at,omitzero"`
}

// CarryOnsets keeps the FirstSeen of findings prev held; new ones get now.
func CarryOnsets(cur, prev []StateReason, now time.Time) {
	for i := range cur {
		if !cur[i].FirstSeen.IsZero() {
			continue
		}
		j := slices.IndexFunc(prev, func(p StateReason) bool { return p.Code == cur[i].Code })
		if j >= 0 {
			cur[i].FirstSeen = prev[j].FirstSeen
		} else {
			cur[i].FirstSeen = unixtime.Of(now)
		}
	}
}

// Observed builds an observed reason with full confidence.
func Observed(code ReasonCode, message string, evidence ...EvidenceRef) StateReason {
	if evidence == nil {
		evidence = []EvidenceRef{}
	}
	return StateReason{Code: code, Message: message, ClaimStatus: ClaimObserved, Confidence: 1, Evidence: evidence}
}

// Policy constants carried on every NormalizedState.
const (
	PolicyVersion = "v1"
	SourceBackend = "backend"
)

// LifecycleLegacy is the pseudo-lifecycle of an entity stored with none.
const LifecycleLegacy = "legacy"

// NormalizedState is one entity's state as every surface shows it.
type NormalizedState struct {
	Lifecycle     string        `json:"lifecycle"`
	Outcome       string        `json:"outcome"`
	Health        Health        `json:"health"`
	Delivery      Delivery      `json:"delivery"`
	Severity      Severity      `json:"severity"`
	Tone          Tone          `json:"tone"`
	Reasons       []StateReason `json:"reasons"`
	EvaluatedAt   unixtime.Time `json:"evaluated_at"`
	PolicyVersion string        `json:"policy_version"`
	Source        string        `json:"source"`
}

// Legacy reports whether the state is a legacy entity's, kept out of counts.
func (s NormalizedState) Legacy() bool { return s.Lifecycle == LifecycleLegacy }

// ListRank is the state's place in the lists' severity order, legacy last.
func (s NormalizedState) ListRank() int {
	if s.Legacy() {
		return len(Severities) + 1
	}
	return s.Severity.Rank()
}

// Normalize fills in severity, tone and the policy stamps; per-type
// partial outcomes are translated first for the shared-outcome cascade.
func Normalize(lifecycle, outcome string, health Health, delivery Delivery, reasons []StateReason, evaluatedAt time.Time) NormalizedState {
	if reasons == nil {
		reasons = []StateReason{}
	}
	s := NormalizedState{
		Lifecycle: lifecycle, Outcome: outcome, Health: health, Delivery: delivery,
		Reasons: reasons, EvaluatedAt: unixtime.Of(evaluatedAt),
		PolicyVersion: PolicyVersion, Source: SourceBackend,
	}
	if lifecycle == LifecycleLegacy {
		s.Severity, s.Tone = SeverityNeutral, ToneNeutral
		return s
	}
	cascadeOutcome := outcome
	switch outcome {
	case "partial":
		if delivery != DeliveryMissing && delivery != DeliveryInvalid {
			s.Delivery = DeliveryPartial
		}
	case "partial_failed":
		cascadeOutcome = "failed"
		if delivery != DeliveryMissing && delivery != DeliveryInvalid {
			s.Delivery = DeliveryPartial
		}
	}
	s.Severity, s.Tone = DeriveSeverity(cascadeOutcome, s.Health, s.Delivery)
	// A finding may raise severity (leftover processes after the end).
	s.Severity, s.Tone = raiseByFindings(s.Severity, s.Tone, outcome == "", reasons)
	return s
}

// SameFindings reports whether two reason lists say the same, so an
// unchanged host writes nothing; FetchedAt is when the probe looked.
func SameFindings(a, b []StateReason) bool {
	return slices.EqualFunc(a, b, func(x, y StateReason) bool {
		return x.Code == y.Code && x.Message == y.Message && unixtime.Seconds(x.Since.Time) == unixtime.Seconds(y.Since.Time) &&
			slices.EqualFunc(x.Evidence, y.Evidence, func(p, q EvidenceRef) bool {
				// The times' count only: they are the detail's own moments.
				return p.Kind == q.Kind && p.Path == q.Path && p.Detail == q.Detail && len(p.Times) == len(q.Times)
			})
	})
}
