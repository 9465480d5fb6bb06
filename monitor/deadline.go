package monitor

import (
	"container/heap"
	"time"

	"watchdog/cronspec"
	"watchdog/state"
	"watchdog/store"
)

// mode is how an entity's process is watched.
type mode uint8

const (
	unwatched mode = iota // no local process of its own, or known dead
	byPidfd               // a pidfd watch reports its death
	polled                // no pidfd to be had: CheckEntity every PollInterval
)

// tracked is one open entity of this host as the monitor keeps it. Each of
// its timed judgements fires once per value of what it is timed from (the
// *For fields), so a deadline that fired and changed nothing is not fired
// again until the entity changes.
type tracked struct {
	key string
	// e is the entity as last handed in. It is shared with the caller of
	// UpdateShared (the live view's entry) and never written through: a
	// change the monitor makes itself (a death's exit status and
	// dead_since) replaces it with a changed copy.
	e *store.Entity
	// mode and watchedPID: what is watched for it now.
	mode       mode
	watchedPID int
	// diedPID is the pid whose death the watch reported: never watched
	// again (its pid may already be another process's).
	diedPID int
	// checkAt is an explicit CheckEntity: a death just seen, a watch that
	// found the process gone, or the next poll. Zero = none.
	checkAt time.Time
	// hbFile is the heartbeat file's mtime as last stat'ed (zero = not yet).
	hbFile time.Time
	// judged: every heartbeat boundary up to here has been looked at.
	judged time.Time
	// enforcedFor, phantomFor, scheduleFor: the dead_since, the last
	// activity and the fire time whose deadline already fired.
	enforcedFor, phantomFor, scheduleFor time.Time

	index int // in the heap; -1 when not in it
	at    time.Time
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

// open says the entity has a lifecycle that has not ended.
func open(e store.Entity) bool { return e.Lifecycle != nil && !e.Terminal }

// heartbeatBase is what the probe ages a heartbeat from: the later of the
// file's mtime (as last seen) and the posted heartbeat, else the start;
// and never earlier than a transition into the current lifecycle state.
// A file not stat'ed yet can only be newer than what is known, so a
// deadline from this base is early or on time, never late.
func heartbeatBase(tr *tracked) time.Time {
	base := tr.e.HeartbeatAt
	if tr.hbFile.After(base) {
		base = tr.hbFile
	}
	if base.IsZero() {
		base = started(*tr.e)
	}
	// The probe ages from the later of the heartbeat and the start of the
	// current state when a transition began it (transitions.StateSince): a
	// restart is not stalled by the silence before it.
	if tr.e.LifecycleAt.After(tr.e.CreatedAt) && tr.e.LifecycleAt.After(base) {
		base = tr.e.LifecycleAt
	}
	return base
}

func started(e store.Entity) time.Time {
	if !e.StartedAt.IsZero() {
		return e.StartedAt
	}
	return e.PIDStartTime
}

// judgedByHeartbeat says whether the entity's health moves with its
// heartbeat's age: open, not a schedule, not already dead.
func judgedByHeartbeat(e store.Entity) bool {
	return open(e) && e.ScheduleCron == "" && e.DeadSince.IsZero() && e.Health != state.HealthProcessDead
}

// heartbeatBoundaries are the times at which the probe's heartbeat
// judgement changes: idle, stalled, and the slow window's two ends.
func heartbeatBoundaries(tr *tracked, s Settings) [4]time.Time {
	var b [4]time.Time
	if base := heartbeatBase(tr); !base.IsZero() {
		b[0], b[1] = base.Add(s.Thresholds.IdleAfter), base.Add(s.Thresholds.StalledAfter)
	}
	if st := started(*tr.e); !st.IsZero() {
		b[2], b[3] = st.Add(s.Thresholds.SlowAfter), st.Add(s.Thresholds.SlowUntil)
	}
	return b
}

// nextHeartbeat is the first heartbeat boundary after judged (zero: none).
func nextHeartbeat(tr *tracked, s Settings) time.Time {
	if !judgedByHeartbeat(*tr.e) || (s.Waiting != nil && s.Waiting(*tr.e)) {
		return time.Time{}
	}
	var next time.Time
	for _, b := range heartbeatBoundaries(tr, s) {
		if !b.IsZero() && b.After(tr.judged) && (next.IsZero() || b.Before(next)) {
			next = b
		}
	}
	return next
}

// crossed says whether a heartbeat boundary lies in (judged, now].
func crossed(tr *tracked, s Settings, now time.Time) bool {
	if s.Waiting != nil && s.Waiting(*tr.e) {
		return false
	}
	for _, b := range heartbeatBoundaries(tr, s) {
		if !b.IsZero() && b.After(tr.judged) && !b.After(now) {
			return true
		}
	}
	return false
}

// lastActivity is the latest sign of life the row and the heartbeat file
// hold, what phantom_after counts from (as the reaper's phantom job).
func lastActivity(tr *tracked) time.Time {
	last := tr.e.CreatedAt
	for _, t := range []time.Time{tr.e.LifecycleAt, tr.e.HeartbeatAt, tr.e.StartedAt, tr.hbFile} {
		if t.After(last) {
			last = t
		}
	}
	return last
}

// phantomCandidate: the reaper ends as a phantom an open entity whose
// process is dead or orphaned and that has been quiet for phantom_after.
func phantomCandidate(e store.Entity) bool {
	return open(e) && (e.Health == state.HealthProcessDead || e.Health == state.HealthOrphaned)
}

// nextFire is an enabled schedule's next fire time after its last (or its
// resume), zero for anything else or a cron that does not parse (the
// reconciling job reports that one).
func nextFire(e store.Entity) time.Time {
	if e.ScheduleCron == "" || e.LifecycleOr("") != "enabled" {
		return time.Time{}
	}
	sched, err := cronspec.Parser.Parse(e.ScheduleCron)
	if err != nil {
		return time.Time{}
	}
	last := e.ScheduleLastFiredAt
	if last.IsZero() {
		last = e.CreatedAt
	}
	if e.LifecycleAt.After(e.CreatedAt) && e.LifecycleAt.After(last) {
		last = e.LifecycleAt
	}
	return sched.Next(last)
}

// deadlines returns the entity's earliest deadline and, for a now at or
// past deadlines, the jobs due by now. A pure function of the tracked
// entity, the settings and now: what the unit tests pin down.
func deadlines(tr *tracked, s Settings, now time.Time) (next time.Time, due job) {
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
	if !open(*tr.e) {
		return time.Time{}, 0
	}
	consider(tr.checkAt, jobCheck)
	consider(nextHeartbeat(tr, s), jobHeartbeat)
	if h := tr.e.Health; tr.e.HeartbeatFile != "" && (h == state.HealthIdle || h == state.HealthStalled) {
		// Judged idle or stalled by its file: only a stat tells when the
		// file is fresh again, so the few such entities are looked at
		// every poll interval (one stat each), not left to the sweep.
		consider(tr.judged.Add(s.PollInterval), jobHeartbeat)
	}
	if ds := tr.e.DeadSince; !ds.IsZero() && !ds.Equal(tr.enforcedFor) {
		consider(ds.Add(s.TerminalGrace), jobEnforce)
	}
	if phantomCandidate(*tr.e) {
		if last := lastActivity(tr); !last.Equal(tr.phantomFor) {
			at := last.Add(s.PhantomAfter)
			// A dead process's owner keeps terminal_grace from the
			// death even when it was quiet long before (the reaper's
			// phantom rule): a deadline before that would be declined
			// and, firing once per activity, never come again.
			if ds := tr.e.DeadSince; !ds.IsZero() && ds.Add(s.TerminalGrace).After(at) {
				at = ds.Add(s.TerminalGrace)
			}
			consider(at, jobPhantom)
		}
	}
	if fire := nextFire(*tr.e); !fire.IsZero() && !fire.Equal(tr.scheduleFor) {
		consider(fire.Add(s.MisfireGrace), jobSchedule)
	}
	return next, due
}

// deadlineHeap orders tracked entities by their earliest deadline: one
// entry per entity, moved with heap.Fix when its deadline changes.
type deadlineHeap []*tracked

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

// Push implements heap.Interface.
func (h *deadlineHeap) Push(x any) {
	tr := x.(*tracked)
	tr.index = len(*h)
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

// schedule puts tr in the heap at at, moves it, or takes it out for a zero
// at.
func (h *deadlineHeap) schedule(tr *tracked, at time.Time) {
	switch {
	case at.IsZero() && tr.index >= 0:
		heap.Remove(h, tr.index)
	case at.IsZero():
	case tr.index >= 0:
		tr.at = at
		heap.Fix(h, tr.index)
	default:
		tr.at = at
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
