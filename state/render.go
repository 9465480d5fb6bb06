package state

import "time"

// StampLayout is how a stored message writes a moment: UTC to the second,
// unambiguous across days and hosts ("2026-11-23 14:02:11Z").
const StampLayout = "2006-01-02 15:04:05Z"

// Stamp writes t for a stored message (StampLayout).
func Stamp(t time.Time) string { return t.UTC().Format(StampLayout) }

// Render is the reason's message as a reader shows it at now: the stored
// message, plus the age of its Since when it has one ("no heartbeat since
// 2026-11-23 14:02:11Z, 12m ago"). Ages are rendered when read, never
// stored, so a message is never frozen at the age it had when written.
func Render(r StateReason, now time.Time) string {
	if r.Since.IsZero() || r.Message == "" {
		return r.Message
	}
	d := now.Sub(r.Since.Time)
	if d < 0 {
		return r.Message + ", in the future"
	}
	return r.Message + ", " + FormatAge(d) + " ago"
}

// Rendered returns a copy of reasons with every message rendered at now
// (Render), for a surface that shows them; the stored reasons are left
// as they are.
func Rendered(reasons []StateReason, now time.Time) []StateReason {
	out := make([]StateReason, len(reasons))
	for i, r := range reasons {
		r.Message = Render(r, now)
		out[i] = r
	}
	return out
}
