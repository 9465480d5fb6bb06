package store

import "time"

// Dismissal is one row of attention_dismissals (the Attention Queue design's dismissals table): an
// operator's snooze or dismissal of one attention item, keyed by the item's
// fingerprint `<entity_type>:<entity_id>:<reason_code>`.
//
// Whether a dismissal still hides its item is decided at read time by the
// attention package (expired snoozes and status changes stop hiding at
// once); VacuumDismissals only drops rows that can never hide anything
// again.
type Dismissal struct {
	// ID is the row's identity, assigned on first insert and kept by later
	// upserts of the same fingerprint.
	ID          string
	Fingerprint string
	EntityType  string
	EntityID    string
	// ReasonCode is the reason at dismissal time (also the fingerprint's
	// last segment).
	ReasonCode string
	// StatusAtDismissal is the entity's lifecycle when it was dismissed,
	// compared with the current one when ClearOnStatusChange is set.
	StatusAtDismissal string
	// SnoozedUntil is the snooze's end; zero means a permanent dismissal
	// (until the status changes, or forever without ClearOnStatusChange).
	SnoozedUntil time.Time
	DismissedAt  time.Time
	DismissedBy  string
	// ClearOnStatusChange makes a status change show the item again.
	ClearOnStatusChange bool
	// Occurrence is the dismissed item's first_seen_at: the occurrence
	// the dismissal covers. A later occurrence (the condition cleared and
	// came back) is a new item it does not hide. Zero (a row from before
	// migration 0006) covers any occurrence.
	Occurrence time.Time
	// CreatedAt is when the fingerprint was first dismissed; upserts keep it.
	CreatedAt time.Time
}

// Triage actions, a TriageEntry's Action.
const (
	TriageSnooze  = "snooze"
	TriageDismiss = "dismiss"
)

// TriageEntry is one row of attention_triage, the append-only record of
// who snoozed or dismissed what: one row per item per action, written in
// the same transaction as the dismissal rows (UpsertDismissals). The
// dismissal row says only who last acted on a fingerprint (an upsert
// replaces it, vacuum drops it); the triage log keeps every act.
type TriageEntry struct {
	// Seq orders the log (assigned on insert).
	Seq int64
	// Batch names the action that wrote the row: the items of one bulk
	// snooze or dismissal share it.
	Batch string
	// At is the dismissal's dismissed_at.
	At time.Time
	// Action is TriageSnooze or TriageDismiss.
	Action      string
	Fingerprint string
	EntityType  string
	EntityID    string
	ReasonCode  string
	// SnoozedUntil is a snooze's end; zero for a dismissal.
	SnoozedUntil time.Time
	// By is the actor (the dismissal's dismissed_by).
	By string
}

// TriageOf is the log row a dismissal's write adds under batch.
func TriageOf(d Dismissal, batch string) TriageEntry {
	action := TriageDismiss
	if !d.SnoozedUntil.IsZero() {
		action = TriageSnooze
	}
	return TriageEntry{Batch: batch, At: d.DismissedAt, Action: action, Fingerprint: d.Fingerprint,
		EntityType: d.EntityType, EntityID: d.EntityID, ReasonCode: d.ReasonCode, SnoozedUntil: d.SnoozedUntil, By: d.DismissedBy}
}
