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
// compact, in the view. Times are Unix nanoseconds (stamp): about 230
// bytes where a store.Entity is 680, its reasons and evidence beside.
type facts struct {
	typ, id        string
	lifecycle      *string
	health         state.Health
	hostID, bootID string
	heartbeatFile  string
	scheduleCron   string
	exit           *state.ExitStatus
	lastSeq        int64
	pid            int
	pidStartTicks  uint64

	pidStart, deadSince, heartbeatAt, scheduleLastFired, startedAt, lifecycleAt, createdAt stamp

	terminal bool
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

// factsOf keeps what the monitor reads of e.
func factsOf(e *store.Entity) facts {
	return facts{
		typ: e.Type, id: e.ID, lifecycle: e.Lifecycle, health: e.Health, hostID: e.HostID, bootID: e.BootID,
		heartbeatFile: e.HeartbeatFile, scheduleCron: e.ScheduleCron, exit: e.Exit, lastSeq: e.LastSeq,
		pid: e.PID, pidStartTicks: e.PIDStartTicks,
		pidStart: stampOf(e.PIDStartTime), deadSince: stampOf(e.DeadSince), heartbeatAt: stampOf(e.HeartbeatAt),
		scheduleLastFired: stampOf(e.ScheduleLastFiredAt), startedAt: stampOf(e.StartedAt),
		lifecycleAt: stampOf(e.LifecycleAt), createdAt: stampOf(e.CreatedAt), terminal: e.Terminal,
	}
}

// entity is the entity as far as the facts go: what judge's timing rules
// and the watch read, every other field empty. Never a reaper step's.
func (f *facts) entity() store.Entity {
	return store.Entity{
		Type: f.typ, ID: f.id, Lifecycle: f.lifecycle, Terminal: f.terminal, LastSeq: f.lastSeq, Health: f.health,
		DeadSince: f.deadSince.time(), HostID: f.hostID, BootID: f.bootID, PID: f.pid, PIDStartTime: f.pidStart.time(),
		PIDStartTicks: f.pidStartTicks, HeartbeatFile: f.heartbeatFile, HeartbeatAt: f.heartbeatAt.time(),
		ScheduleCron: f.scheduleCron, ScheduleLastFiredAt: f.scheduleLastFired.time(), StartedAt: f.startedAt.time(),
		LifecycleAt: f.lifecycleAt.time(), CreatedAt: f.createdAt.time(), Exit: f.exit,
	}
}
