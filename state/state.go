// Package state is watchdog's model of an entity's condition: the three
// orthogonal dimensions of the Unified Entity State Model design (lifecycle/outcome, health, delivery),
// the reasons and evidence behind them, the derived severity and tone, the
// display chain, and the registry of reason codes.
//
// Everything here is pure: no I/O, no clock. Callers pass the time in.
package state

import (
	"slices"
	"time"

	"watchdog/internal/unixtime"
)

// Health says whether an entity's runtime (its process) is okay.
type Health string

// Health values (docs/reference/state-model.md, Dimensions). Schedules also use Due and Misfired.
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
	// HealthLost is an entity of a host whose daemon has been silent for
	// thresholds.host_lost_after: nobody can see whether its work runs.
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

// Outcomes is the shared outcome vocabulary (docs/reference/state-model.md). Entity types add
// their own terminal values (interrupted, partial, archived, closed, ...);
// an outcome is always the terminal lifecycle value itself.
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

// Rank orders severities for sorting: critical is 0, neutral 3, anything
// unrecognised sorts last.
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

// Evidence kinds (docs/reference/state-model.md, Dimensions). A watchdog observation is tool_result, file or
// artifact evidence with a Detail a person can read.
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

// EvidenceRef points at the proof behind a reason (the Unified Entity State Model design).
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
	// Times are the moments Detail writes, each with the text that writes
	// it ("start time 1716517000.12", "last heartbeat 2026-11-23
	// 14:02:11Z"), so that a reader can show each in its own zone with
	// its age while the stored detail keeps its words. Absent on evidence
	// stored before they were recorded.
	Times []EvidenceTime `json:"times,omitempty"`
}

// EvidenceTime is one moment an evidence detail writes: Text is the
// substring of the detail that writes it, At the moment.
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
	// Since is the moment the message speaks of ("no heartbeat since
	// …", "dead since …"), zero when it speaks of none. Stored messages
	// carry the moment as a timestamp (Stamp), never an age, so they stay
	// true and a sweep over an unchanged host rewrites nothing; readers
	// add the age when they show it (Render).
	Since unixtime.Time `json:"since,omitzero"`
	// FirstSeen is when the watchdog first saw this finding in its current
	// occurrence: kept from probe to probe while the finding persists
	// (CarryOnsets), new when it comes back after clearing. The queue
	// dates the finding's item by it, so a dismissal covers one
	// occurrence. Zero on a transition's reason and on findings stored
	// before it existed.
	FirstSeen unixtime.Time `json:"first_seen_at,omitzero"`
}

// CarryOnsets dates the findings in cur: a finding whose code prev (the
// stored findings) already held keeps prev's FirstSeen; a new one is first
// seen at now. A stored finding without a date keeps none (the queue then
// dates it as before, by health_since).
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

// Observed builds an observed reason with full confidence, the common case
// for what watchdog itself saw.
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

// LifecycleLegacy is the pseudo-lifecycle shown for an entity whose stored
// lifecycle is NULL (imported before the vocabulary existed).
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

// Legacy reports whether the state belongs to a legacy entity, which is
// kept out of severity metrics, failure counts and the attention queue.
func (s NormalizedState) Legacy() bool { return s.Lifecycle == LifecycleLegacy }

// ListRank is the state's place in the lists' severity order
// (wire.SeverityKey, and the store's sev_rank column): its severity's
// rank, legacy after every severity.
func (s NormalizedState) ListRank() int {
	if s.Legacy() {
		return len(Severities) + 1
	}
	return s.Severity.Rank()
}

// Normalize fills in the derived fields (severity, tone) and the policy
// stamps. Outcome is the terminal lifecycle value or "" while non-terminal;
// callers that know the entity's graph supply it.
//
// Two per-type terminals need translating before the severity cascade,
// which only knows the shared outcome vocabulary: a `partial` outcome
// (workflow) is partial delivery, so it reads as a warning and never as
// success; a `partial_failed` turn is a failure whose partial text is
// evidence, so it carries partial delivery and ranks as failed.
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
	// A finding may set a severity of its own (leftover processes): the
	// dimensions cannot say it, as the root's health is ok once ended.
	s.Severity, s.Tone = raiseByFindings(s.Severity, s.Tone, outcome == "", reasons)
	return s
}

// SameFindings reports whether two reason lists say the same: the same
// codes in order, each with the same message and moment (Since), and
// evidence of the same kind, path and detail. Stored messages and details
// carry moments, never ages (see StateReason.Since), so an unchanged host
// compares equal sweep after sweep and writes nothing, while a changed
// fact (a zombie reaped: "(zombie)" becomes "(no such process)") is
// rewritten. Moments compare as stored, to the microsecond. When the evidence was fetched is left out: it is when the
// probe looked, not what it saw.
func SameFindings(a, b []StateReason) bool {
	return slices.EqualFunc(a, b, func(x, y StateReason) bool {
		return x.Code == y.Code && x.Message == y.Message && unixtime.Seconds(x.Since.Time) == unixtime.Seconds(y.Since.Time) &&
			slices.EqualFunc(x.Evidence, y.Evidence, func(p, q EvidenceRef) bool {
				// The times' count, not their values: they are the
				// detail's own moments, so only evidence stored before
				// they were recorded differs, and is rewritten once.
				return p.Kind == q.Kind && p.Path == q.Path && p.Detail == q.Detail && len(p.Times) == len(q.Times)
			})
	})
}
