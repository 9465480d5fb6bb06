package monitor

import (
	"container/heap"
	"time"

	"watchdog/judge"
	"watchdog/state"
	"watchdog/store"
)

// mode is how an entity's process is watched.
type mode uint8

const (
	unwatched mode = iota // no local process of its own, or known dead
	byPidfd               // a pidfd watch reports its death
	polled                // no pidfd to be had: Observe every PollInterval
)

// tracked is one open entity of this host as the monitor keeps it. Each
// timed judgement fires once per value it is timed from (the *For fields),
// so a deadline that changed nothing does not fire again.
type tracked struct {
	// f is what the deadlines and the watch read of the entity (facts).
	f facts
	// rare is nil for most: read through r, written through w.
	rare *rare
	// checkAt is an explicit Observe (a death, a gone process, a poll); zero: none.
	checkAt stamp
	// judged: every heartbeat boundary up to here has been looked at.
	judged stamp

	at stamp

	// The small fields last, together (ADR-0052); watchedPID is what is watched now.
	watchedPID int32
	index      int32 // in the heap; -1 when not in it
	mode       mode
	// rewatch: polled for want of an fd, so each poll offers it to the
	// watcher again.
	rewatch bool
	// localDead: the monitor's news of a death, not yet back from the store,
	// laid over the entity a reaper step gets.
	localDead bool
}

// job is one thing due for an entity.
type job uint8

const (
	jobCheck job = 1 << iota
	jobHeartbeat
	jobEnforce
	jobPhantom
	jobSchedule
)

// The rules the deadlines come from are package judge's: the monitor only
// keeps what it learnt and which deadlines already fired.

// nextHeartbeat is the first heartbeat boundary after judged (zero: none).
func nextHeartbeat(tr *tracked, e *store.Entity, s Settings) time.Time {
	var next time.Time
	for _, b := range judge.HeartbeatBoundaries(e, tr.r().hbFile.time(), s.Settings) {
		if !b.IsZero() && b.After(tr.judged.time()) && (next.IsZero() || b.Before(next)) {
			next = b
		}
	}
	return next
}

// crossed says whether a heartbeat boundary lies in (judged, now].
func crossed(tr *tracked, e *store.Entity, s Settings, now time.Time) bool {
	for _, b := range judge.HeartbeatBoundaries(e, tr.r().hbFile.time(), s.Settings) {
		if !b.IsZero() && b.After(tr.judged.time()) && !b.After(now) {
			return true
		}
	}
	return false
}

// deadlines returns the entity's earliest deadline and the jobs due by now:
// a pure function, for the unit tests.
func deadlines(tr *tracked, host string, s Settings, now time.Time) (next time.Time, due job) {
	consider := func(at time.Time, j job) {
		if at.IsZero() {
			return
		}
		if !at.After(now) {
			due |= j
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	e, r := tr.entity(host), tr.r()
	if !e.Open() {
		return time.Time{}, 0
	}
	consider(tr.checkAt.time(), jobCheck)
	consider(nextHeartbeat(tr, &e, s), jobHeartbeat)
	if h := e.Health; e.HeartbeatFile != "" && !r.hbWatched && (h == state.HealthIdle || h == state.HealthStalled) {
		// A file inotify does not watch: only a stat tells it is fresh again.
		consider(tr.judged.time().Add(s.PollInterval), jobHeartbeat)
	}
	if ds := e.DeadSince; !ds.IsZero() && stampOf(ds) != r.enforcedFor {
		consider(judge.GraceEnds(&e, s.Settings), jobEnforce)
	}
	if at := judge.PhantomAt(&e, r.hbFile.time(), s.Settings); !at.IsZero() && stampOf(judge.LastActivity(&e, r.hbFile.time())) != r.phantomFor {
		consider(at, jobPhantom)
	}
	if fire, at := judge.MisfireAt(&e, s.Settings); stampOf(fire) != r.scheduleFor {
		consider(at, jobSchedule)
	}
	return next, due
}

// deadlineHeap orders tracked entities by their earliest deadline, one
// entry each.
type deadlineHeap []*tracked

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = int32(i), int32(j)
}

// Push implements heap.Interface.
func (h *deadlineHeap) Push(x any) {
	tr := x.(*tracked)
	tr.index = int32(len(*h))
	*h = append(*h, tr)
}

// Pop implements heap.Interface.
func (h *deadlineHeap) Pop() any {
	old := *h
	tr := old[len(old)-1]
	old[len(old)-1] = nil
	tr.index = -1
	*h = old[:len(old)-1]
	return tr
}

// schedule puts tr in the heap at at, moves it, or takes it out for zero.
func (h *deadlineHeap) schedule(tr *tracked, at time.Time) {
	switch {
	case at.IsZero() && tr.index >= 0:
		heap.Remove(h, int(tr.index))
	case at.IsZero():
	case tr.index >= 0:
		tr.at = stampOf(at)
		heap.Fix(h, int(tr.index))
	default:
		tr.at = stampOf(at)
		heap.Push(h, tr)
	}
}

// peek is the earliest deadline (nil for none).
func (h deadlineHeap) peek() *tracked {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}
