package attention

import (
	"slices"
	"time"

	"watchdog/store"
)

// Hides reports whether dismissal d hides it (an item of d's fingerprint):
// its snooze has not expired, it is d's occurrence (any, for a row without
// one), and d ignores status changes or the status is still d's.
func Hides(d store.Dismissal, it *Item, now time.Time) bool {
	if !d.SnoozedUntil.IsZero() && !d.SnoozedUntil.After(now) {
		return false
	}
	if !d.Occurrence.IsZero() && !SameOccurrence(d.Occurrence, it.FirstSeenAt.Time) {
		return false
	}
	return !d.ClearOnStatusChange || d.StatusAtDismissal == it.Status
}

// Carries reports whether dismissal d, made on a finding its reason
// subsumes, hides it at now: the same occurrence, so an incident keeps its
// acknowledgement when the watchdog ends the entity for it (ADR-0032).
func Carries(d store.Dismissal, it *Item, now time.Time) bool {
	if !d.SnoozedUntil.IsZero() && !d.SnoozedUntil.After(now) {
		return false
	}
	if d.Occurrence.IsZero() {
		return false
	}
	i := slices.IndexFunc(it.subsumed, func(s subsumedFinding) bool { return s.fingerprint == d.Fingerprint })
	if i < 0 {
		return false
	}
	onset, at := it.subsumed[i].onset, it.FirstSeenAt.Time
	return SameOccurrence(d.Occurrence, onset) && (!onset.After(at) || SameOccurrence(onset, at))
}

// Acknowledgement returns the dismissal or snooze that hides it at now:
// its own (Hides), else a carried one (Carries). The one rule every surface
// (queue, view, page, gauges, push) asks.
func Acknowledgement(dismissals map[string]store.Dismissal, it *Item, now time.Time) (store.Dismissal, bool) {
	if len(dismissals) == 0 {
		return store.Dismissal{}, false
	}
	if d, ok := dismissals[it.Fingerprint]; ok && Hides(d, it, now) {
		return d, true
	}
	for _, s := range it.subsumed {
		if d, ok := dismissals[s.fingerprint]; ok && Carries(d, it, now) {
			return d, true
		}
	}
	return store.Dismissal{}, false
}

// SubsumedFingerprints are the fingerprints of the findings it's reason
// subsumes, whose acknowledgements may carry over to it (Carries).
func (it *Item) SubsumedFingerprints() []string {
	out := make([]string, len(it.subsumed))
	for i, s := range it.subsumed {
		out[i] = s.fingerprint
	}
	return out
}

// SameOccurrence reports whether two first_seen_at moments name the same
// occurrence; the tolerance only absorbs a float's last bit.
func SameOccurrence(a, b time.Time) bool {
	d := a.Sub(b)
	return d < time.Millisecond && d > -time.Millisecond
}
