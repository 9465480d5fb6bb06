package monitor

import (
	"math"
	"time"
	"unique"

	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
)

// facts are what the monitor keeps of an open entity: what its deadlines
// (package judge's timing rules), its watch (the process's identity) and
// its next change's comparison read, and nothing else (ADR-0042, third
// step). A reaper step wants the entity whole: the monitor reads it then
// (Options.Entity, the live view), so the daemon holds each entity once,
// compact, in the view. Times are Unix nanoseconds (stamp). What most
// entities lack (a heartbeat file, a schedule, an exit, a dead_since, a
// host id of another host) is in the tracked entity's rare, nil for
// most; the facts with it give the entity back (tracked.entity).
type facts struct {
	// tb is the entity's type and boot id, interned together (package
	// unique): the entities of one type and boot (a host's, of a few
	// types) share one copy of both, 8 bytes an entity where the type's
	// string alone was 16 and the boot id's own handle 8. The zero handle
	// is "" and "" (typeBootOf); read through typ and bootID.
	tb unique.Handle[typeBoot]
	// id is the entity's own string as last handed in (the view's), which
	// the monitor's map key is too: no key string of the monitor's own
	// per entity.
	id            string
	lifecycle     *string
	lastSeq       int64
	pidStartTicks uint64

	pidStart, heartbeatAt, startedAt, lifecycleAt, createdAt stamp

	// The small fields last, together (no padding between them).
	//
	// pid is a Linux pid: 32 bits (pid_max is at most 2^22; pid32).
	pid int32
	// health is the entity's, as its place in state.Healths (odd: none of
	// them, healthOf).
	health   uint8
	terminal bool
	// hostLocal: the host id is the monitor's own (Options.HostID, not
	// ""): the one host id a tracked entity has but "" (local), save in a
	// monitor with no host id of its own, which keeps any other in rare.
	hostLocal bool
}

// rare is what few tracked entities have, behind one pointer (nil when
// all of it is empty): the facts most entities lack, and what the
// monitor learns near the end of an entity's life (dead_since, a
// death's pids, the deadlines that have fired). With them out of it,
// tracked is 144 bytes, a size class, where it was 176
// (TestTrackedSize); rare is 136 (the 144 class), paid only by the
// entities that have one.
type rare struct {
	// Of the entity as last handed in (facts).
	//
	// hostID is a host id neither "" nor the monitor's: only a monitor
	// with no Options.HostID tracks such an entity.
	hostID                      string
	heartbeatFile, scheduleCron string
	exit                        *state.ExitStatus
	scheduleLastFired           stamp
	// deadSince is the entity's dead_since, or the monitor's own news of
	// it (tracked.localDead): set late in an entity's life.
	deadSince stamp

	// The monitor's own.
	//
	// whole is the entity as last handed in, kept only by a monitor
	// with no Options.Entity to read it from (and, for its last check,
	// by an entity that has just ended); never written through.
	whole *store.Entity
	// treeRoot is the root kept in the process tree for it (zero: none):
	// kept past its death, for the leftovers, until it is dropped or
	// names another process.
	treeRoot proctree.Root
	// hbFile is the heartbeat file's mtime as last stat'ed (zero = not
	// yet).
	hbFile stamp
	// enforcedFor, phantomFor, scheduleFor: the dead_since, the last
	// activity and the fire time whose deadline already fired.
	// Stamps: compared, never computed with.
	enforcedFor, phantomFor, scheduleFor stamp
	// diedPID is the pid whose death the watch reported: never watched
	// again (its pid may already be another process's). exitPID is the
	// pid whose exit status was recorded (the connector's or the
	// pidfd's, whichever came first): never recorded twice. Both are set
	// at a death, late in an entity's life, so they are here rather than
	// in every tracked entity.
	diedPID, exitPID int32
	// diedAt is when diedPID died; awaitExit: its judgement waits a
	// moment for the connector's exit status (exitWait).
	diedAt    stamp
	awaitExit bool
	// hbWatch is the heartbeat file watched for it ("" none), hbWatched
	// whether by inotify (else polled).
	hbWatch   string
	hbWatched bool
}

// none is what a tracked entity without rare reads: every field empty.
// Never written (tracked.r).
var none rare

// otherHealth is what the facts give back for a health that is none of
// state.Healths: judge's timing rules and the watch compare health with
// known words only (idle, stalled, process dead, orphaned), so any word
// that is none of them reads the same to them. Never written anywhere.
const otherHealth = state.Health("(other)")

// odd is the place of a health none of state.Healths.
const odd = 255

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

// typeBoot is what the entities of a host have alike, interned as one
// (facts.tb): their type and their boot id.
type typeBoot struct{ typ, boot string }

// typeBootOf is typ and boot interned, prev when it is those already (an
// entity's next change, most often: one lookup saved, two string
// comparisons paid), the zero handle for two empty strings.
func typeBootOf(prev unique.Handle[typeBoot], typ, boot string) unique.Handle[typeBoot] {
	switch {
	case prev != unique.Handle[typeBoot]{} && prev.Value() == typeBoot{typ, boot}:
		return prev
	case typ == "" && boot == "":
		return unique.Handle[typeBoot]{}
	}
	return unique.Make(typeBoot{typ, boot})
}

// typ is the entity's type: the one copy its type and boot share
// (typeBootOf), not the string handed in.
func (f *facts) typ() string {
	if f.tb == (unique.Handle[typeBoot]{}) {
		return ""
	}
	return f.tb.Value().typ
}

// bootID is the entity's boot id, as typ.
func (f *facts) bootID() string {
	if f.tb == (unique.Handle[typeBoot]{}) {
		return ""
	}
	return f.tb.Value().boot
}

// r is tr's rare to read: none when it has none.
func (tr *tracked) r() *rare {
	if tr.rare == nil {
		return &none
	}
	return tr.rare
}

// w is tr's rare to write, made when it has none.
func (tr *tracked) w() *rare {
	if tr.rare == nil {
		tr.rare = new(rare)
	}
	return tr.rare
}

// tidy drops tr's rare once all of it is empty again.
func (tr *tracked) tidy() {
	if tr.rare != nil && *tr.rare == (rare{}) {
		tr.rare = nil
	}
}

// setFacts keeps what the monitor reads of e, for a monitor whose host id
// is host.
func (tr *tracked) setFacts(e *store.Entity, host string) {
	tr.f = facts{
		tb: typeBootOf(tr.f.tb, e.Type, e.BootID), id: e.ID, lifecycle: e.Lifecycle, health: placeOf(e.Health),
		hostLocal: host != "" && e.HostID == host, lastSeq: e.LastSeq,
		pid: pid32(e.PID), pidStartTicks: e.PIDStartTicks,
		pidStart: stampOf(e.PIDStartTime), heartbeatAt: stampOf(e.HeartbeatAt),
		startedAt: stampOf(e.StartedAt), lifecycleAt: stampOf(e.LifecycleAt), createdAt: stampOf(e.CreatedAt), terminal: e.Terminal,
	}
	other := ""
	if !tr.f.hostLocal {
		other = e.HostID
	}
	if tr.rare == nil && other == "" && e.HeartbeatFile == "" && e.ScheduleCron == "" && e.Exit == nil && e.ScheduleLastFiredAt.IsZero() && e.DeadSince.IsZero() {
		return // most entities: nothing rare to keep
	}
	r := tr.w()
	r.hostID, r.heartbeatFile, r.scheduleCron, r.exit = other, e.HeartbeatFile, e.ScheduleCron, e.Exit
	r.scheduleLastFired, r.deadSince = stampOf(e.ScheduleLastFiredAt), stampOf(e.DeadSince)
	tr.tidy()
}

// entity is the entity as far as the facts go, for a monitor whose host
// id is host: what judge's timing rules and the watch read, every other
// field empty. Never a reaper step's.
func (tr *tracked) entity(host string) store.Entity {
	f, r := &tr.f, tr.r()
	hostID := r.hostID
	if f.hostLocal {
		hostID = host
	}
	return store.Entity{
		Type: f.typ(), ID: f.id, Lifecycle: f.lifecycle, Terminal: f.terminal, LastSeq: f.lastSeq, Health: f.healthOf(),
		DeadSince: r.deadSince.time(), HostID: hostID, BootID: f.bootID(), PID: int(f.pid), PIDStartTime: f.pidStart.time(),
		PIDStartTicks: f.pidStartTicks, HeartbeatFile: r.heartbeatFile, HeartbeatAt: f.heartbeatAt.time(),
		ScheduleCron: r.scheduleCron, ScheduleLastFiredAt: r.scheduleLastFired.time(), StartedAt: f.startedAt.time(),
		LifecycleAt: f.lifecycleAt.time(), CreatedAt: f.createdAt.time(), Exit: r.exit,
	}
}
