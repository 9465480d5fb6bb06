package wire

import (
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

// Heartbeats is how a reader finds the heartbeat an entity is judged by.
// The daemon does not store a heartbeat file's mtime (an agent touching
// its file every 5 s would cost a write per sweep), so a read on the
// file's own host stats the file, once, by the probe's rule.
//
// It is injected rather than called from here so that wire stays a
// package of shapes: building a document never touches the file system
// unless its reader says which host it is and how to look.
type Heartbeats struct {
	// HostID is this host's id: only the heartbeat files of its entities
	// are read, as only they are judged here (another host's path means
	// nothing on this one).
	HostID string
	// Last is reaper.LastHeartbeat: the later of the file's mtime (the
	// file examined with its owner's rights) and the posted heartbeat, as
	// the judgement takes it; zero when neither.
	Last func(e *store.Entity, now time.Time) (at time.Time, fromFile bool)
	// Required says whether entities of a type are expected to heartbeat
	// from their start (thresholds.require_heartbeat); nil: none are.
	Required func(typ string) bool
}

// NoHangDetection is an open entity's hang_detection when it has no
// heartbeat source: no file, none posted yet, and its type not required
// to heartbeat. It is judged on liveness alone.
const NoHangDetection = "hangs are not detected: no heartbeat source"

// hangDetection is e's hang_detection: NoHangDetection for an open entity
// with a process and no heartbeat source, "" otherwise.
func (h *Heartbeats) hangDetection(e *store.Entity) string {
	if !e.Open() || e.PID <= 0 || e.HeartbeatFile != "" || !e.HeartbeatAt.IsZero() || e.ScheduleCron != "" {
		return ""
	}
	if h != nil && h.Required != nil && h.Required(e.Type) {
		return ""
	}
	return NoHangDetection
}

// Of is e's heartbeat at now, nil when it has none. A nil h (a reader
// that cannot see this host's files), or an entity of another host, has
// only its posted heartbeat, which is then also the one judged.
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

// LastHeartbeat is the time of the heartbeat shown for e: its `heartbeat`
// object, or, from a daemon that predates it, its posted `heartbeat_at`.
func (e *Entity) LastHeartbeat() unixtime.Time {
	if e.Heartbeat != nil {
		return e.Heartbeat.At
	}
	return e.HeartbeatAt
}
