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
