package wire

import (
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

// Heartbeats is how a reader finds the heartbeat an entity is judged by.
// A heartbeat file's mtime is not stored (a write per sweep), so a read on
// its own host stats it; injected so wire stays a package of shapes.
type Heartbeats struct {
	// HostID is this host's id: only its entities' heartbeat files are read.
	HostID string
	// Last is reaper.LastHeartbeat: the later of the file's mtime and the posted heartbeat.
	Last func(e *store.Entity, now time.Time) (at time.Time, fromFile bool)
	// Required says whether a type must heartbeat from its start; nil: none.
	Required func(typ string) bool
}

// NoHangDetection is an open entity's hang_detection with no heartbeat source.
const NoHangDetection = "hangs are not detected: no heartbeat source"

// hangDetection is e's hang_detection, "" when a hang would be seen.
func (h *Heartbeats) hangDetection(e *store.Entity) string {
	if !e.Open() || e.PID <= 0 || e.HeartbeatFile != "" || !e.HeartbeatAt.IsZero() || e.ScheduleCron != "" {
		return ""
	}
	if h != nil && h.Required != nil && h.Required(e.Type) {
		return ""
	}
	return NoHangDetection
}

// Of is e's heartbeat at now, nil when none; without h, or on another host, the posted one.
func (h *Heartbeats) Of(e *store.Entity, now time.Time) *state.JudgedHeartbeat {
	if h != nil && h.Last != nil && e.HeartbeatFile != "" && h.HostID != "" && e.HostID == h.HostID {
		at, fromFile := h.Last(e, now)
		switch {
		case at.IsZero():
			return nil
		case fromFile:
			return &state.JudgedHeartbeat{At: unixtime.Of(at), Source: state.HeartbeatSourceFile}
		}
		return &state.JudgedHeartbeat{At: unixtime.Of(at), Source: state.HeartbeatSourcePosted}
	}
	if e.HeartbeatAt.IsZero() {
		return nil
	}
	return &state.JudgedHeartbeat{At: unixtime.Of(e.HeartbeatAt), Source: state.HeartbeatSourcePosted}
}

// LastHeartbeat is the heartbeat shown for e, else heartbeat_at from an older daemon.
func (e *Entity) LastHeartbeat() unixtime.Time {
	if e.Heartbeat != nil {
		return e.Heartbeat.At
	}
	return e.HeartbeatAt
}
