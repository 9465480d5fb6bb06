package state

import (
	"time"

	"watchdog/internal/unixtime"
)

// Heartbeat sources on the wire.
const (
	// HeartbeatSourceFile is a heartbeat file's mtime.
	HeartbeatSourceFile = "file"
	// HeartbeatSourcePosted is a heartbeat posted to the API or the CLI.
	HeartbeatSourcePosted = "posted"
)

// JudgedHeartbeat is the heartbeat an entity is judged by, as of the read: the
// later of its heartbeat file's mtime (on the host that can see the file)
// and its posted heartbeat. It is the entity read's `heartbeat` object
// (wire.Entity) and an attention item's (attention.Item), one shape for
// both; `heartbeat_at` stays the posted one alone, for the readers written
// before it. The age is the reader's to compute against the read's time
// (state.evaluated_at, or a list's or queue's generated_at): every time on
// the wire is a moment, never an age that goes stale in a cache. It is
// found at read time (wire.Heartbeats) and never stored.
type JudgedHeartbeat struct {
	At unixtime.Time `json:"at"`
	// Source is HeartbeatSourceFile or HeartbeatSourcePosted.
	Source string `json:"source"`
}

// Text is h as a queue item shows it at now: "last heartbeat 4s ago
// (file)", the age as `watchdog status`'s HEARTBEAT column gives it ("now"
// for a time ahead of the clock); "" for none.
func (h *JudgedHeartbeat) Text(now time.Time) string {
	if h == nil || h.At.IsZero() {
		return ""
	}
	age := "now"
	if d := now.Sub(h.At.Time); d >= 0 {
		age = FormatAge(d) + " ago"
	}
	return "last heartbeat " + age + " (" + h.Source + ")"
}
