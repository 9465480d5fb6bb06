package state

import (
	"strings"
	"time"
)

// DeriveSeverity is the severity cascade, first match wins (state-model.md);
// total: any values yield a severity and a tone.
func DeriveSeverity(outcome string, health Health, delivery Delivery) (Severity, Tone) {
	switch {
	// Critical: failures, dead processes, missing artifacts, stalls.
	case outcome == "failed" || outcome == "aborted",
		health == HealthProcessDead || health == HealthOrphaned,
		delivery == DeliveryMissing,
		health == HealthStalled,
		health == HealthMisfired,
		health == HealthLost:
		return SeverityCritical, ToneDanger

	// Warning: bounds hit, a process that looks unwell, partial or invalid output.
	case outcome == "timed_out",
		health == HealthIdle || health == HealthDegraded || health == HealthDisconnected,
		delivery == DeliveryPartial || delivery == DeliveryInvalid:
		return SeverityWarning, ToneWarning

	// Info: work in progress, or intentionally skipped.
	case health == HealthRunning, health == HealthDue:
		return SeverityInfo, ToneInfo
	case outcome == "skipped":
		return SeverityInfo, ToneNeutral

	// Success.
	case outcome == "succeeded" || outcome == "completed" || outcome == "merged":
		return SeverityNeutral, ToneSuccess
	}
	// Cancelled is intentional, not a problem; anything else is neutral.
	return SeverityNeutral, ToneNeutral
}

// SeverityTones lists the only tones DeriveSeverity gives each severity (a
// test keeps it so): the pre-seeded label pairs of watchdog_entities.
var SeverityTones = map[Severity][]Tone{
	SeverityCritical: {ToneDanger},
	SeverityWarning:  {ToneWarning},
	SeverityInfo:     {ToneInfo, ToneNeutral},
	SeverityNeutral:  {ToneSuccess, ToneNeutral},
}

// FindingSeverity is the severity a finding sets on its own (ok false for
// most): leftovers warn while open, critical once nobody is left (ADR-0044).
func FindingSeverity(code ReasonCode, open bool) (Severity, Tone, bool) {
	if code != RunHealthLeftoverProcesses {
		return "", "", false
	}
	if open {
		return SeverityWarning, ToneWarning, true
	}
	return SeverityCritical, ToneDanger, true
}

// raiseByFindings is sev and tone, or a finding's when higher.
func raiseByFindings(sev Severity, tone Tone, open bool, reasons []StateReason) (Severity, Tone) {
	for _, r := range reasons {
		if s, t, ok := FindingSeverity(r.Code, open); ok && s.Rank() < sev.Rank() {
			sev, tone = s, t
		}
	}
	return sev, tone
}

// ReasonSeverity is the severity watchdog_reasons_active counts a reason
// under: a finding's own, an outcome's alone, else the holder's.
func ReasonSeverity(code ReasonCode, holder Severity, open bool) Severity {
	if s, _, ok := FindingSeverity(code, open); ok {
		return s
	}
	_, rest, _ := strings.Cut(string(code), ".")
	dim, _, _ := strings.Cut(rest, ".")
	switch dim {
	case "health", "delivery", "blocked", "host", "reaper", "outcome":
		return holder
	}
	return Normalize(dim, dim, HealthOK, DeliveryNotExpected, nil, time.Time{}).Severity
}
