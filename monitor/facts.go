package monitor

import (
	"math"
	"time"
	"unique"

	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
)

// facts are what the monitor keeps of an open entity: what its deadlines,
// watch and change comparison read; reaper steps read the view's whole
// entity (ADR-0042, ADR-0052). What most entities lack is in rare.
type facts struct {
	// tb is the type and boot id interned together (typeBootOf); read through typ and bootID.
	tb unique.Handle[typeBoot]
	// id is the entity's own string (the view's), shared with the map's key.
	id            string
	lifecycle     *string
	lastSeq       int64
	pidStartTicks uint64

	pidStart, heartbeatAt, startedAt, lifecycleAt, createdAt stamp

	// The small fields last, together, with no padding.
	pid int32
	// health is the place in state.Healths (odd: none of them).
	health   uint8
	terminal bool
	// hostLocal: the host id is the monitor's own (Options.HostID, not "").
	hostLocal bool
}

// rare is what few tracked entities have, behind one pointer (nil when all
// empty), so the common tracked entity stays small (TestTrackedSize).
type rare struct {
	// hostID is neither "" nor the monitor's: only without Options.HostID.
	hostID                      string
	heartbeatFile, scheduleCron string
	exit                        *state.ExitStatus
	scheduleLastFired           stamp
	// deadSince is dead_since, or the monitor's own news of it (localDead).
	deadSince stamp

	// whole is the entity as handed in, kept only without Options.Entity; never written through.
	whole *store.Entity
	// treeRoot is its root in the process tree (zero: none), kept past its death.
	treeRoot proctree.Root
	// hbFile is the heartbeat file's mtime as last stat'ed (zero: not yet).
	hbFile stamp
	// enforcedFor, phantomFor, scheduleFor: what the fired deadlines were for.
	enforcedFor, phantomFor, scheduleFor stamp
	// diedPID's death was reported: never watched again (the pid may be reused).
	// exitPID's exit status was recorded: never recorded twice.
	diedPID, exitPID int32
	// diedAt is when diedPID died; heard is the exit status the kernel
	// gave, kept until the store holds one (a first write that did not land).
	diedAt stamp
	heard  *state.ExitStatus
	// hbWatch is the heartbeat file watched ("" none), hbWatched: by inotify.
	hbWatch   string
	hbWatched bool
	// fileToldAt is when an event last told the heartbeat file changed.
	fileToldAt stamp
}

// none is what a tracked entity without rare reads; never written.
var none rare

// otherHealth stands for any health none of state.Healths: the timing
// rules compare health with known words only.
const otherHealth = state.Health("(other)")

const odd = 255

func (f *facts) healthOf() state.Health {
	if int(f.health) < len(state.Healths) {
		return state.Healths[f.health]
	}
	return otherHealth
}

// pid32 is pid as the monitor keeps it, saturating beyond 32 bits.
func pid32(pid int) int32 {
	switch {
	case pid > math.MaxInt32:
		return math.MaxInt32
	case pid < math.MinInt32:
		return math.MinInt32
	}
	return int32(pid)
}

func placeOf(h state.Health) uint8 {
	for i, w := range state.Healths {
		if w == h {
			return uint8(i)
		}
	}
	return odd
}

// stamp is a time in Unix nanoseconds (0: zero time), clamped to int64's range.
type stamp int64

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

// typeBoot is what the entities of a host share, interned as one (facts.tb).
type typeBoot struct{ typ, boot string }

// typeBootOf is typ and boot interned: prev when unchanged, zero for "" and "".
func typeBootOf(prev unique.Handle[typeBoot], typ, boot string) unique.Handle[typeBoot] {
	switch {
	case prev != unique.Handle[typeBoot]{} && prev.Value() == typeBoot{typ, boot}:
		return prev
	case typ == "" && boot == "":
		return unique.Handle[typeBoot]{}
	}
	return unique.Make(typeBoot{typ, boot})
}

// typ is the entity's type, the interned copy (typeBootOf).
func (f *facts) typ() string {
	if f.tb == (unique.Handle[typeBoot]{}) {
		return ""
	}
	return f.tb.Value().typ
}

func (f *facts) bootID() string {
	if f.tb == (unique.Handle[typeBoot]{}) {
		return ""
	}
	return f.tb.Value().boot
}

func (tr *tracked) r() *rare {
	if tr.rare == nil {
		return &none
	}
	return tr.rare
}

func (tr *tracked) w() *rare {
	if tr.rare == nil {
		tr.rare = new(rare)
	}
	return tr.rare
}

func (tr *tracked) tidy() {
	if tr.rare != nil && *tr.rare == (rare{}) {
		tr.rare = nil
	}
}

// setFacts keeps what the monitor reads of e.
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

// entity is the entity as far as the facts go: never a reaper step's.
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
