package wire

import (
	"watchdog/internal/unixtime"
	"watchdog/store"
)

// Paging of GET /api/attention/triage.
const (
	// DefaultTriagePage and MaxTriagePage are the default and largest
	// limit of a triage log page.
	DefaultTriagePage = 100
	MaxTriagePage     = 1000
)

// TriageEntry is one row of the triage log (store.TriageEntry): one item
// snoozed or dismissed by one request, the items of a bulk request
// sharing its batch.
type TriageEntry struct {
	Seq         int64         `json:"seq"`
	Batch       string        `json:"batch"`
	At          unixtime.Time `json:"at"`
	Action      string        `json:"action"`
	Fingerprint string        `json:"fingerprint"`
	EntityType  string        `json:"entity_type"`
	EntityID    string        `json:"entity_id"`
	ReasonCode  string        `json:"reason_code"`
	// SnoozedUntil is a snooze's end; null for a dismissal.
	SnoozedUntil *unixtime.Time `json:"snoozed_until"`
	// Actor is who acted: operator over HTTP (ADR-0007).
	Actor string `json:"actor"`
}

// TriagePage is the body of GET /api/attention/triage: the log newest
// first with seq below the request's before, and NextBefore, the seq to
// ask before for the next (older) page, or 0 when this page is the last.
type TriagePage struct {
	Items      []TriageEntry `json:"items"`
	NextBefore int64         `json:"next_before,omitempty"`
}

// FromTriage is the wire form of the log's rows, in their order.
func FromTriage(rows []store.TriageEntry) []TriageEntry {
	out := make([]TriageEntry, 0, len(rows))
	for _, e := range rows {
		w := TriageEntry{Seq: e.Seq, Batch: e.Batch, At: unixtime.Of(e.At), Action: e.Action, Fingerprint: e.Fingerprint,
			EntityType: e.EntityType, EntityID: e.EntityID, ReasonCode: e.ReasonCode, Actor: e.By}
		if !e.SnoozedUntil.IsZero() {
			w.SnoozedUntil = &unixtime.Time{Time: e.SnoozedUntil}
		}
		out = append(out, w)
	}
	return out
}
