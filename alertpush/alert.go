// Package alertpush pushes the attention queue's critical and warning
// items to Alertmanager (docs/alerting.md, "Push alerts to Alertmanager"), one alert per item, through
// Alertmanager's v2 API (POST /api/v2/alerts), the way Prometheus does:
// every firing alert is sent again every resend interval with an endsAt
// four intervals ahead, so that the alerts resolve by themselves when the
// daemon is gone; an item that leaves the queue (cleared, snoozed or
// dismissed) is sent once more with endsAt now, until Alertmanager took
// it.
//
// An alert's identity in Alertmanager is its label set: alertname
// WatchdogEntity, entity_type, entity_id, reason_code, severity and host.
// Its startsAt is the item's first_seen_at, which the store keeps, so a
// restarted daemon sends the very same alerts again (no duplicate, nothing
// lost); at start it also reads Alertmanager's active WatchdogEntity alerts
// of its host and resolves those its queue no longer holds (they cleared
// while it was down).
//
// Pushing never blocks the daemon: the queue is read from the live view in
// the pusher's own goroutine, and each Alertmanager has a sender of its own
// holding only the newest state (a state not yet sent when a newer one
// comes is dropped and counted), retrying with exponential backoff and
// jitter, each request bounded by a timeout.
package alertpush

import (
	"maps"
	"slices"
	"strings"
	"time"

	"watchdog/attention"
	"watchdog/docs"
	"watchdog/live"
	"watchdog/state"
)

// AlertName is the alertname label of every pushed alert.
const AlertName = "WatchdogEntity"

// Alert is one alert in Alertmanager's v2 JSON (postableAlert, and the
// fields of gettableAlert this package reads back).
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
	// Status is only in what GET /api/v2/alerts answers.
	Status *AlertStatus `json:"status,omitempty"`
}

// AlertStatus is a gettableAlert's status.
type AlertStatus struct {
	// State is active, suppressed or unprocessed.
	State string `json:"state"`
}

// Key is the alert's identity in Alertmanager: its labels, sorted.
func (a Alert) Key() string {
	names := slices.Sorted(maps.Keys(a.Labels))
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(a.Labels[n])
		b.WriteByte(0)
	}
	return b.String()
}

// Pushed reports whether severity s is pushed: critical and warning; info
// items are for the queue, not for a pager.
func Pushed(s state.Severity) bool {
	return s == state.SeverityCritical || s == state.SeverityWarning
}

// AlertOf is the firing alert of an item read at now (attention.Item.At,
// so its summary is rendered at push time) of entry, labelled with host
// when the entity has no host of its own. runbook, when set, is the base
// of the runbook_url annotation. EndsAt is left for the sender to set.
func AlertOf(it attention.Item, e live.Entry, host, runbook string) Alert {
	if e.Entity.HostID != "" {
		host = e.Entity.HostID
	}
	code := string(it.Reason.Code)
	a := Alert{
		Labels: map[string]string{
			"alertname":   AlertName,
			"entity_type": it.Entity.Type,
			"entity_id":   it.Entity.ID,
			"reason_code": code,
			"severity":    string(it.Severity),
			"host":        host,
		},
		Annotations: map[string]string{
			"summary":     summary(it, e.Display),
			"description": description(it),
		},
		StartsAt: it.FirstSeenAt.Time,
	}
	// Only a published runbook is linked: the daemon's own /runbook is
	// no address a receiver of the alert can open.
	if runbook != "" {
		if td, ok := docs.For(runbook, code); ok {
			a.Annotations["runbook_url"] = td.Link
		}
	}
	return a
}

// summary names the entity and says where it stands: "session/s-42
// (reviewer for PR 1064): Running · Process dead". The label is left out
// when the entity has none of its own (the queue then shows type/id).
func summary(it attention.Item, display string) string {
	name := it.Entity.Type + "/" + it.Entity.ID
	if l := it.Entity.Label; l != "" && l != name {
		name += " (" + l + ")"
	}
	if display == "" {
		return name
	}
	return name + ": " + display
}

// description is the reason's message as rendered for the read, then the
// evidence's details, so the person paged reads what was seen.
func description(it attention.Item) string {
	parts := []string{it.Reason.Summary}
	for _, ev := range it.Reason.EvidenceRefs {
		if ev.Detail != "" && !slices.Contains(parts, ev.Detail) {
			parts = append(parts, ev.Detail)
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return parts[0] + " (evidence: " + strings.Join(parts[1:], "; ") + ")"
}
