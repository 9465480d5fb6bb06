package monitor

import (
	"math"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// facts are what the monitor keeps of an open entity: what its deadlines
// (package judge's timing rules), its watch (the process's identity) and
// its next change's comparison read, and nothing else (ADR-0042, third
// step). A reaper step wants the entity whole: the monitor reads it then
// (Options.Entity, the live view), so the daemon holds each entity once,
// compact, in the view. Times are Unix nanoseconds (stamp): 184 bytes
// where a store.Entity is 680, its reasons and evidence beside.
type facts struct {
	// key is the entity's key in the monitor's map (Key: its type, "/",
	// its id), the very string the map holds: its type and id are sliced
	// from it (typ, id), not kept beside it.
	key            string
	lifecycle      *string
	hostID, bootID string
	heartbeatFile  string
	scheduleCron   string
	exit           *state.ExitStatus
	lastSeq        int64
	pidStartTicks  uint64

	pidStart, deadSince, heartbeatAt, scheduleLastFired, startedAt, lifecycleAt, createdAt stamp

	// The small fields last, together (no padding between them).
	//
	// pid is a Linux pid: 32 bits (pid_max is at most 2^22; pid32).
	pid int32
	// typLen is the type's length in key.
	typLen int32
	// health is the entity's, as its place in state.Healths (odd: none of
	// them, healthOf).
	health   uint8
	terminal bool
}

// otherHealth is what the facts give back for a health that is none of
// state.Healths: judge's timing rules and the watch compare health with
// known words only (idle, stalled, process dead, orphaned), so any word
// that is none of them reads the same to them. Never written anywhere.
const otherHealth = state.Health("(other)")

// odd is the place of a health none of state.Healths.
const odd = 255

func (f *facts) typ() string { return f.key[:f.typLen] }
func (f *facts) id() string  { return f.key[f.typLen+1:] }

// healthOf is the entity's health as the timing rules read it.
func (f *facts) healthOf() state.Health {
	if int(f.health) < len(state.Healths) {
		return state.Healths[f.health]
	}
	return otherHealth
}

// pid32 is pid as the monitor keeps it; one past 32 bits (no Linux pid:
// a hand-edited row) is kept as the largest, which names no process
// either.
func pid32(pid int) int32 {
	switch {
	case pid > math.MaxInt32:
		return math.MaxInt32
	case pid < math.MinInt32:
		return math.MinInt32
	}
	return int32(pid)
}

// placeOf is h's place in state.Healths, or odd.
func placeOf(h state.Health) uint8 {
	for i, w := range state.Healths {
		if w == h {
			return uint8(i)
		}
	}
	return odd
}

// stamp is a time as the monitor keeps it: Unix nanoseconds, 0 for the
// zero time. A time outside what int64 nanoseconds hold (before 1678,
// after 2262) is kept as the nearest they hold: a deadline from it is as
// far past or as far ahead as it was, which is all a deadline reads.
type stamp int64

// The range of times a stamp holds, beside the zero time.
var (
	stampMin = time.Unix(0, math.MinInt64+1)
	stampMax = time.Unix(0, math.MaxInt64)
)

func stampOf(t time.Time) stamp {
	switch {
	case t.IsZero():
		return 0
	case t.Before(stampMin):
		return stamp(stampMin.UnixNano())
	case t.After(stampMax):
		return stamp(stampMax.UnixNano())
	}
	if n := t.UnixNano(); n != 0 {
		return stamp(n)
	}
	return 1 // the Unix epoch itself: 0 is the zero time
}

func (s stamp) time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s))
}

// factsOf keeps what the monitor reads of e, whose key (Key) is key.
func factsOf(key string, e *store.Entity) facts {
	return facts{
		key: key, typLen: int32(len(e.Type)), lifecycle: e.Lifecycle, health: placeOf(e.Health), hostID: e.HostID, bootID: e.BootID,
		heartbeatFile: e.HeartbeatFile, scheduleCron: e.ScheduleCron, exit: e.Exit, lastSeq: e.LastSeq,
		pid: pid32(e.PID), pidStartTicks: e.PIDStartTicks,
		pidStart: stampOf(e.PIDStartTime), deadSince: stampOf(e.DeadSince), heartbeatAt: stampOf(e.HeartbeatAt),
		scheduleLastFired: stampOf(e.ScheduleLastFiredAt), startedAt: stampOf(e.StartedAt),
		lifecycleAt: stampOf(e.LifecycleAt), createdAt: stampOf(e.CreatedAt), terminal: e.Terminal,
	}
}

// entity is the entity as far as the facts go: what judge's timing rules
// and the watch read, every other field empty. Never a reaper step's.
func (f *facts) entity() store.Entity {
	return store.Entity{
		Type: f.typ(), ID: f.id(), Lifecycle: f.lifecycle, Terminal: f.terminal, LastSeq: f.lastSeq, Health: f.healthOf(),
		DeadSince: f.deadSince.time(), HostID: f.hostID, BootID: f.bootID, PID: int(f.pid), PIDStartTime: f.pidStart.time(),
		PIDStartTicks: f.pidStartTicks, HeartbeatFile: f.heartbeatFile, HeartbeatAt: f.heartbeatAt.time(),
		ScheduleCron: f.scheduleCron, ScheduleLastFiredAt: f.scheduleLastFired.time(), StartedAt: f.startedAt.time(),
		LifecycleAt: f.lifecycleAt.time(), CreatedAt: f.createdAt.time(), Exit: f.exit,
	}
}
