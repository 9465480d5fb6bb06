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

// JudgedHeartbeat is the heartbeat an entity is judged by, as of the read:
// the later of its file's mtime and its posted heartbeat. Found at read
// time, never stored; a moment, never an age that goes stale in a cache.
type JudgedHeartbeat struct {
	At unixtime.Time `json:"at"`
	// Source is HeartbeatSourceFile or HeartbeatSourcePosted.
	Source string `json:"source"`
}

// Text is h as a queue item shows it at now ("last heartbeat 4s ago
// (file)"); "" for none.
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
