package attention

import (
	"slices"
	"time"

	"watchdog/store"
)

// Hides reports whether dismissal d hides it (an item of d's
// fingerprint): its snooze has not expired (or it is a permanent
// dismissal), it is the occurrence d was made on (the same first_seen_at;
// a dismissal from before occurrences were recorded covers any), and
// either d ignores status changes or the entity's status is still the one
// it was recorded with.
func Hides(d store.Dismissal, it *Item, now time.Time) bool {
	if !d.SnoozedUntil.IsZero() && !d.SnoozedUntil.After(now) {
		return false
	}
	if !d.Occurrence.IsZero() && !SameOccurrence(d.Occurrence, it.FirstSeenAt.Time) {
		return false
	}
	return !d.ClearOnStatusChange || d.StatusAtDismissal == it.Status
}

// Carries reports whether dismissal d, made on the item of a finding that
// it's reason subsumes (state.Subsumes), hides it at now: an incident
// keeps its acknowledgement when the watchdog ends the entity for it
// (a snoozed process_dead becomes process_dead_no_terminal, a dismissed
// orphan is reaped as phantom_orphaned, a snoozed delivery finding ends
// in a failed artifact contract). It is the same occurrence when
//
//   - the entity still holds the finding d names, dated (FirstSeen) by
//     d's occurrence: the death, orphaning or contract d was made on, not
//     a later one (a process re-registered that died again has a new
//     onset, so its end is a new item);
//   - the finding began no later than the transition (it.FirstSeenAt):
//     the end was based on it;
//   - the snooze has not expired (a permanent dismissal never does).
//
// clear_on_status_change does not end a carried acknowledgement: the
// status change it would catch is the escalation itself, the incident's
// own consequence, and any other change of the entity moves what the
// rule compares (a later transition brings its own reason, a recovery
// clears the finding or gives it a new onset). It is not compared with
// the time of the dismissal either: a snooze read before the end and
// written after it is still the incident's. A row without an occurrence
// (from before migration 0006) or a finding without an onset cannot
// prove the occurrence and carries nothing. The vacuum keeps a row
// whose finding the entity still holds in that occurrence, so it never
// deletes what carries.
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

// Acknowledgement returns the dismissal or snooze that hides it at now,
// if any: its own (the same fingerprint, Hides), else one made on a
// finding its reason subsumes, carried over (Carries). The one rule of
// what an acknowledgement hides: the queue (Assemble), the live view's
// queue and counts, and so the page, the gauges and the Alertmanager push
// all ask it.
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
// subsumes, whose acknowledgements may carry over to it (Carries): the
// live view indexes its items by them too, to count what a dismissal
// hides.
func (it *Item) SubsumedFingerprints() []string {
	out := make([]string, len(it.subsumed))
	for i, s := range it.subsumed {
		out[i] = s.fingerprint
	}
	return out
}

// SameOccurrence reports whether two first_seen_at moments name the same
// occurrence. They come from the same stored column through the same
// conversion; the tolerance only absorbs a float's last bit.
func SameOccurrence(a, b time.Time) bool {
	d := a.Sub(b)
	return d < time.Millisecond && d > -time.Millisecond
}
