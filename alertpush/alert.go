// Package alertpush pushes the attention queue's critical and warning items
// to Alertmanager's v2 API the way Prometheus does (docs/alerting.md,
// ADR-0030): resent with an endsAt ahead, so alerts resolve by themselves
// when the daemon is gone, and keyed by labels and the stored first_seen_at,
// so a restarted daemon sends the very same alerts.
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

// Alert is one alert in Alertmanager's v2 JSON (postableAlert, gettableAlert).
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

// Pushed reports whether severity s is pushed: info is for the queue, not a pager.
func Pushed(s state.Severity) bool {
	return s == state.SeverityCritical || s == state.SeverityWarning
}

// AlertOf is the firing alert of an item read at now, labelled with host
// when the entity has none; EndsAt is left for the sender.
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
	// The daemon's own /runbook is no address a receiver can open.
	if runbook != "" {
		if td, ok := docs.For(runbook, code); ok {
			a.Annotations["runbook_url"] = td.Link
		}
	}
	return a
}

// summary is "session/s-42 (reviewer for PR 1064): Running · Process dead".
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

// description is the reason's message, then the evidence's details.
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
