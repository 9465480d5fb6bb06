package store

import "time"

// Dismissal is one row of attention_dismissals: an operator's snooze or
// dismissal of one item, keyed by `<entity_type>:<entity_id>:<reason_code>`.
// Whether it still hides its item is decided at read time by the attention package.
type Dismissal struct {
	// ID is assigned on first insert and kept by later upserts.
	ID          string
	Fingerprint string
	EntityType  string
	EntityID    string
	// ReasonCode is the reason at dismissal (the fingerprint's last segment).
	ReasonCode string
	// StatusAtDismissal is compared with the current lifecycle (ClearOnStatusChange).
	StatusAtDismissal string
	// SnoozedUntil is the snooze's end; zero means a permanent dismissal.
	SnoozedUntil time.Time
	DismissedAt  time.Time
	DismissedBy  string
	// ClearOnStatusChange makes a status change show the item again.
	ClearOnStatusChange bool
	// Occurrence is the item's first_seen_at: a later occurrence is not hidden.
	// Zero (rows before migration 0006) covers any.
	Occurrence time.Time
	// CreatedAt is when the fingerprint was first dismissed; upserts keep it.
	CreatedAt time.Time
}

// Triage actions, a TriageEntry's Action.
const (
	TriageSnooze  = "snooze"
	TriageDismiss = "dismiss"
)

// TriageEntry is one row of attention_triage, the append-only log of every
// snooze or dismissal, written in the dismissal's transaction.
type TriageEntry struct {
	// Seq orders the log (assigned on insert).
	Seq int64
	// Batch names the action that wrote the row (shared by one bulk action).
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
