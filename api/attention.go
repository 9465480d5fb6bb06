package api

import (
	"errors"
	"net/http"
	"time"

	"watchdog/attention"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/transitions"
	"watchdog/wire"
)

// Snooze is the body of POST /api/attention/snooze.
type Snooze struct {
	Fingerprint string `json:"fingerprint"`
	// Until must be in the future.
	Until *unixtime.Time `json:"until"`
	// ClearOnStatusChange defaults to true: a status change shows the
	// item again before the snooze ends.
	ClearOnStatusChange *bool `json:"clear_on_status_change,omitempty"`
}

// Dismiss is the body of POST /api/attention/dismiss.
type Dismiss struct {
	Fingerprint string `json:"fingerprint"`
	// ClearOnStatusChange defaults to true; false dismisses the item for
	// as long as the entity exists.
	ClearOnStatusChange *bool `json:"clear_on_status_change,omitempty"`
}

// Dismissal is the response of snooze and dismiss: the stored row.
type Dismissal struct {
	Fingerprint       string `json:"fingerprint"`
	EntityType        string `json:"entity_type"`
	EntityID          string `json:"entity_id"`
	ReasonCode        string `json:"reason_code"`
	StatusAtDismissal string `json:"status_at_dismissal"`
	// SnoozedUntil is null for a dismissal.
	SnoozedUntil        *unixtime.Time `json:"snoozed_until"`
	DismissedAt         unixtime.Time  `json:"dismissed_at"`
	DismissedBy         string         `json:"dismissed_by"`
	ClearOnStatusChange bool           `json:"clear_on_status_change"`
	// FirstSeenAt is the occurrence the dismissal covers (the item's
	// first_seen_at): a recurrence is a new item it does not hide.
	FirstSeenAt unixtime.Time `json:"first_seen_at"`
}

// attentionQueue is GET /api/attention.
func (s *server) attentionQueue(w http.ResponseWriter, r *http.Request) {
	q, err := attention.ParseQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	q.FailureWindow = s.failureWindow()
	// The queue is the live view's items, dismissals applied at now: the
	// same rule, the same items as watchdog_attention_items and STATUS=.
	if err := s.View.Sync(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.Now()
	queue := s.View.Attention(q, now)
	// Each item's heartbeat is the one its entity is judged by, found
	// now (a heartbeat file of this host's is stat'ed), as the entity
	// read shows it.
	queue.FillHeartbeats(func(typ, id string) *state.JudgedHeartbeat {
		ent, ok := s.View.Get(typ, id, now)
		if !ok {
			return nil
		}
		return s.Heartbeats.Of(&ent.Entity, now)
	})
	writeJSON(w, http.StatusOK, queue)
}

// Bounds implements wire.Bounded: until is after now and at most
// transitions.MaxSnooze ahead.
func (*Snooze) Bounds() []wire.Bound {
	return []wire.Bound{{Path: "until", Range: transitions.SnoozeRange}}
}

func (s *server) snooze(w http.ResponseWriter, r *http.Request) {
	var body Snooze
	now := s.Now()
	if err := wire.DecodeAt(r.Body, &body, false, now); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.Until == nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, `field "until" is required (Unix seconds; to dismiss without an end, use /api/attention/dismiss)`)
		return
	}
	// DecodeAt checked "until" against transitions.SnoozeRange as sent.
	s.upsertDismissal(w, r, body.Fingerprint, body.Until.Time, body.ClearOnStatusChange)
}

func (s *server) dismiss(w http.ResponseWriter, r *http.Request) {
	var body Dismiss
	if err := wire.Decode(r.Body, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	s.upsertDismissal(w, r, body.Fingerprint, time.Time{}, body.ClearOnStatusChange)
}

// upsertDismissal records a snooze (until set) or a dismissal by
// attention.Dismiss, the rule `watchdog snooze` and `dismiss` share: the
// fingerprint must name an item in the queue now, else 404.
func (s *server) upsertDismissal(w http.ResponseWriter, r *http.Request, fp string, until time.Time, clear *bool) {
	d, err := attention.Dismiss(r.Context(), s.Store, attention.Dismissing{
		Fingerprint: fp, Until: until, ClearOnStatusChange: clear == nil || *clear, By: "operator",
	}, s.Now(), s.failureWindow())
	switch {
	case errors.Is(err, attention.ErrBadFingerprint):
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	case errors.Is(err, attention.ErrNoItem):
		writeError(w, http.StatusNotFound, transitions.CauseNotFound, err.Error())
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	out := Dismissal{
		Fingerprint: d.Fingerprint, EntityType: d.EntityType, EntityID: d.EntityID, ReasonCode: d.ReasonCode,
		StatusAtDismissal: d.StatusAtDismissal, DismissedAt: unixtime.Of(d.DismissedAt), DismissedBy: d.DismissedBy,
		ClearOnStatusChange: d.ClearOnStatusChange, FirstSeenAt: unixtime.Of(d.Occurrence),
	}
	if !until.IsZero() {
		out.SnoozedUntil = &unixtime.Time{Time: until}
	}
	writeJSON(w, http.StatusOK, out)
}
