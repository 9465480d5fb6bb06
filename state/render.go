package state

import "time"

// StampLayout is how a stored message writes a moment: UTC to the second.
const StampLayout = "2006-01-02 15:04:05Z"

// Stamp writes t for a stored message (StampLayout).
func Stamp(t time.Time) string { return t.UTC().Format(StampLayout) }

// Render is the reason's message at now, with the age of its Since. Ages
// are rendered when read, never stored, so a message never freezes.
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

// Rendered returns a copy of reasons rendered at now (Render); the stored
// reasons are left as they are.
func Rendered(reasons []StateReason, now time.Time) []StateReason {
	out := make([]StateReason, len(reasons))
	for i, r := range reasons {
		r.Message = Render(r, now)
		out[i] = r
	}
	return out
}
