package wire

import (
	"watchdog/internal/unixtime"
	"watchdog/store"
)

// Paging of GET /api/attention/triage.
const (
	// DefaultTriagePage and MaxTriagePage are a triage log page's limits.
	DefaultTriagePage = 100
	MaxTriagePage     = 1000
)

// TriageEntry is one row of the triage log; a bulk request's rows share a batch.
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
	// Actor is the principal who acted.
	Actor string `json:"actor"`
}

// TriagePage is the body of GET /api/attention/triage; NextBefore is 0 on the last page.
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
