package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"go.uber.org/zap"

	"watchdog/attention"
	"watchdog/docs"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// Snooze is the body of POST /api/attention/snooze: exactly one of
// fingerprint, fingerprints and cluster, and one of until and for.
type Snooze struct {
	Fingerprint  string   `json:"fingerprint,omitempty"`
	Fingerprints []string `json:"fingerprints,omitempty"`
	Cluster      string   `json:"cluster,omitempty"`
	// Until must be in the future.
	Until *unixtime.Time `json:"until,omitempty"`
	// For is seconds from the server's now: a browser's clock may disagree.
	For *float64 `json:"for,omitempty"`
	// ClearOnStatusChange defaults to true.
	ClearOnStatusChange *bool `json:"clear_on_status_change,omitempty"`
}

// Dismiss is the body of POST /api/attention/dismiss, targeted as Snooze's.
type Dismiss struct {
	Fingerprint  string   `json:"fingerprint,omitempty"`
	Fingerprints []string `json:"fingerprints,omitempty"`
	Cluster      string   `json:"cluster,omitempty"`
	// ClearOnStatusChange defaults to true; false dismisses for the entity's life.
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
	// FirstSeenAt is the occurrence covered: a recurrence is a new item.
	FirstSeenAt unixtime.Time `json:"first_seen_at"`
}

// Triaged is the response of a bulk snooze or dismiss: every row written
// and the batch their triage log entries share.
type Triaged struct {
	Batch      string      `json:"batch"`
	Count      int         `json:"count"`
	Dismissals []Dismissal `json:"dismissals"`
}

// attentionQueue is GET /api/attention.
func (s *server) attentionQueue(w http.ResponseWriter, r *http.Request) {
	q, err := attention.ParseQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	q.FailureWindow = s.failureWindow()
	host, ok := s.resolveHost(w, r, q.Host)
	if !ok {
		return
	}
	q.Host = host
	// The same items as watchdog_attention_items and STATUS=.
	view, err := s.queueReaderFor(r.Context(), q.Host)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.Now()
	queue := view.Attention(q, now)
	// Each item's heartbeat is the one its entity is judged by.
	queue.FillHeartbeats(func(typ, id string) *state.JudgedHeartbeat {
		ent, ok := view.Get(typ, id, now)
		if !ok {
			return nil
		}
		return s.Heartbeats.Of(&ent.Entity, now)
	})
	base := *s.runbook.Load()
	queue.FillRunbook(func(code state.ReasonCode) (string, string, bool) {
		td, ok := docs.For(base, string(code))
		return td.Link, td.Do, ok
	})
	writeJSON(w, http.StatusOK, queue)
}

// Bounds implements wire.Bounded: until and for within transitions.MaxSnooze.
func (*Snooze) Bounds() []wire.Bound {
	return []wire.Bound{
		{Path: "until", Range: transitions.SnoozeRange},
		{Path: "for", Range: func(time.Time) transitions.Range { return transitions.SnoozeForRange() }},
	}
}

// triageBy is who a triage is recorded as: the caller's principal, or
// "operator" with auth: none.
func triageBy(r *http.Request) string {
	if n := CallerOf(r).Principal.Name; n != "" && n != anonymous {
		return n
	}
	return "operator"
}

func (s *server) snooze(w http.ResponseWriter, r *http.Request) {
	var body Snooze
	now := s.Now()
	if err := wire.DecodeAt(r.Body, &body, false, now); err != nil {
		s.fail(w, r, err)
		return
	}
	var until time.Time
	switch {
	case body.Until != nil && body.For != nil:
		writeError(w, http.StatusBadRequest, causeBadRequest, `give "until" (Unix seconds) or "for" (seconds from now), not both`)
		return
	case body.Until != nil:
		// DecodeAt checked "until" against transitions.SnoozeRange as sent.
		until = body.Until.Time
	case body.For != nil:
		until = now.Add(unixtime.Duration(*body.For))
	default:
		writeError(w, http.StatusBadRequest, causeBadRequest, `field "until" (Unix seconds) or "for" (seconds from now) is required (to dismiss without an end, use /api/attention/dismiss)`)
		return
	}
	s.triage(w, r, body.Fingerprint, body.Fingerprints, body.Cluster, until, body.ClearOnStatusChange, now)
}

func (s *server) dismiss(w http.ResponseWriter, r *http.Request) {
	var body Dismiss
	if err := wire.Decode(r.Body, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	s.triage(w, r, body.Fingerprint, body.Fingerprints, body.Cluster, time.Time{}, body.ClearOnStatusChange, s.Now())
}

// triage records a snooze (until set) or dismissal of fp's item, or of
// every item fps or cluster names, all or none.
func (s *server) triage(w http.ResponseWriter, r *http.Request, fp string, fps []string, cluster string, until time.Time, clear *bool, now time.Time) {
	given := 0
	for _, set := range []bool{fp != "", fps != nil, cluster != ""} {
		if set {
			given++
		}
	}
	if given != 1 {
		writeError(w, http.StatusBadRequest, causeBadRequest, `give exactly one of "fingerprint", "fingerprints" (a list) and "cluster" (a cluster_id or its reason code)`)
		return
	}
	if fp != "" {
		if s.notTheirs(w, r, []string{fp}) {
			return
		}
		s.upsertDismissal(w, r, fp, until, clear, now)
		return
	}
	if cluster != "" {
		id, err := attention.ParseCluster(cluster)
		if err != nil {
			writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
			return
		}
		view, err := s.queueReaderFor(r.Context(), "")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if fps, err = attention.ClusterMembers(view.Attention(attention.ClusterQuery(s.failureWindow()), now), id); err != nil {
			writeError(w, http.StatusNotFound, transitions.CauseNotFound, err.Error())
			return
		}
	}
	if s.notTheirs(w, r, fps) {
		return
	}
	got, err := attention.DismissAll(r.Context(), s.Store, attention.Bulk{
		Fingerprints: fps, Until: until, ClearOnStatusChange: clear == nil || *clear, By: triageBy(r),
	}, now, s.failureWindow())
	if s.triageFailed(w, r, err) {
		return
	}
	out := Triaged{Batch: got.Batch, Count: len(got.Dismissals), Dismissals: make([]Dismissal, 0, len(got.Dismissals))}
	for _, d := range got.Dismissals {
		out.Dismissals = append(out.Dismissals, dismissalOf(d))
	}
	action := store.TriageDismiss
	if !until.IsZero() {
		action = store.TriageSnooze
	}
	s.Log.Info("attention triaged", zap.String("action", action), zap.Int("items", out.Count), zap.String("batch", got.Batch),
		zap.String("by", triageBy(r)), zap.String("cluster", cluster))
	writeJSON(w, http.StatusOK, out)
}

// notTheirs answers 403 and reports true when an item of fps is of an
// entity the caller may not act on (docs/security.md); nothing is written.
func (s *server) notTheirs(w http.ResponseWriter, r *http.Request, fps []string) bool {
	p := CallerOf(r).Principal
	if p.AnyUID() {
		return false
	}
	for _, fp := range fps {
		typ, id, _, err := attention.ParseFingerprint(fp)
		if err != nil {
			continue
		}
		e, err := s.Store.Get(r.Context(), typ, id)
		if err != nil {
			continue // no such entity: the triage says so
		}
		if !p.MayActOn(&e) {
			writeError(w, http.StatusForbidden, transitions.CauseForbidden, fmt.Sprintf("%s may not triage %s: %s/%s is another user's", p.Name, fp, typ, id))
			return true
		}
	}
	return false
}

// triageFailed answers err, if any, and reports whether it did.
func (s *server) triageFailed(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, attention.ErrBadFingerprint):
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
	case errors.Is(err, attention.ErrTooMany):
		writeError(w, http.StatusUnprocessableEntity, causeOverLimit, err.Error())
	case errors.Is(err, attention.ErrNoItem):
		writeError(w, http.StatusNotFound, transitions.CauseNotFound, err.Error())
	default:
		s.fail(w, r, err)
	}
	return true
}

// upsertDismissal triages one item by attention.Dismiss, the CLI's rule.
func (s *server) upsertDismissal(w http.ResponseWriter, r *http.Request, fp string, until time.Time, clear *bool, now time.Time) {
	d, err := attention.Dismiss(r.Context(), s.Store, attention.Dismissing{
		Fingerprint: fp, Until: until, ClearOnStatusChange: clear == nil || *clear, By: triageBy(r),
	}, now, s.failureWindow())
	if s.triageFailed(w, r, err) {
		return
	}
	writeJSON(w, http.StatusOK, dismissalOf(d))
}

// triageLog is GET /api/attention/triage, newest first, paged by seq.
func (s *server) triageLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	before, err := queryInt(q.Get("before"), "before", 0, 0, math.MaxInt64)
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	limit, err := queryInt(q.Get("limit"), "limit", wire.DefaultTriagePage, 1, wire.MaxTriagePage)
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	// One row more than asked tells whether another page follows.
	rows, err := s.Store.TriageLogBefore(r.Context(), before, int(limit)+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := wire.TriagePage{}
	if len(rows) > int(limit) {
		rows = rows[:limit]
		page.NextBefore = rows[len(rows)-1].Seq
	}
	page.Items = wire.FromTriage(rows)
	writeJSON(w, http.StatusOK, page)
}

// dismissalOf is a stored dismissal as the API answers it.
func dismissalOf(d store.Dismissal) Dismissal {
	out := Dismissal{
		Fingerprint: d.Fingerprint, EntityType: d.EntityType, EntityID: d.EntityID, ReasonCode: d.ReasonCode,
		StatusAtDismissal: d.StatusAtDismissal, DismissedAt: unixtime.Of(d.DismissedAt), DismissedBy: d.DismissedBy,
		ClearOnStatusChange: d.ClearOnStatusChange, FirstSeenAt: unixtime.Of(d.Occurrence),
	}
	if !d.SnoozedUntil.IsZero() {
		out.SnoozedUntil = &unixtime.Time{Time: d.SnoozedUntil}
	}
	return out
}
