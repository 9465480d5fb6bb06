package state

import (
	"strings"
	"time"
)

// DeriveSeverity is derive_severity of the Unified Entity State Model
// design: a priority cascade over the
// three dimensions, first match wins. It is total: any combination,
// including values outside the vocabulary, yields a severity and a tone.
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

	// Warning: deliberate bounds hit, a process that looks unwell, partial
	// or invalid output.
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

// SeverityTones lists the tones DeriveSeverity gives each severity, the
// only pairs it yields (a test walks the whole vocabulary to keep it so):
// the pre-seeded label pairs of watchdog_entities.
var SeverityTones = map[Severity][]Tone{
	SeverityCritical: {ToneDanger},
	SeverityWarning:  {ToneWarning},
	SeverityInfo:     {ToneInfo, ToneNeutral},
	SeverityNeutral:  {ToneSuccess, ToneNeutral},
}

// FindingSeverity is the severity a finding sets on its own, whatever the
// dimensions say (ok false for a finding that sets none: most findings act
// through the health or delivery they come with). Leftover processes
// (run.health.leftover_processes) are a warning while the entity is open
// (its end, by its owner or by its type's rules, is still to come) and
// critical once it has ended: nobody is left to stop them (ADR-0044).
func FindingSeverity(code ReasonCode, open bool) (Severity, Tone, bool) {
	if code != RunHealthLeftoverProcesses {
		return "", "", false
	}
	if open {
		return SeverityWarning, ToneWarning, true
	}
	return SeverityCritical, ToneDanger, true
}

// raiseByFindings is sev and tone, or the severity a finding sets when
// that is higher (FindingSeverity).
func raiseByFindings(sev Severity, tone Tone, open bool, reasons []StateReason) (Severity, Tone) {
	for _, r := range reasons {
		if s, t, ok := FindingSeverity(r.Code, open); ok && s.Rank() < sev.Rank() {
			sev, tone = s, t
		}
	}
	return sev, tone
}

// ReasonSeverity is the severity one reason carries on its own, held by
// an entity of severity holder: the severity watchdog_reasons_active
// counts it under. A finding's is its own (FindingSeverity); an
// outcome's code (run.completed.exit_zero, run.failed.exit_nonzero) has
// its outcome's alone, so a success is never critical, even on an entity
// its leftovers made critical; a health, delivery, blocking, host or
// reaper code has the holder's: it is what made the holder so.
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
