package reaper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// ErrOtherHost says an entity was recorded on another host: its pid means
// nothing here, and only that host's watchdog may judge it.
var ErrOtherHost = errors.New("recorded on another host")

// ErrNotProbed says an entity is not something a probe judges (a legacy
// entity, or a schedule).
var ErrNotProbed = errors.New("not probed")

// Probed is what ProbeOne found about one entity.
type Probed struct {
	// Entity is the entity with the judgement's observation applied, written or not.
	Entity store.Entity
	// Checked says the entity had something of its own to probe (a pid,
	// a heartbeat, files); a show or a team has not, and reads ok.
	Checked bool
	// Judged is the judgement (judge.Judge) of what was seen: its
	// observation, the acts it calls for and the next deadline.
	Judged judge.Verdict
	// Written says the findings differed from the stored ones and were
	// recorded (only when asked to record).
	Written bool
	// Recording says the caller asked for the findings to be recorded.
	Recording bool
}

// Verdict is what `watchdog probe --entity` reports, in the ad-hoc probe's shape.
func (p Probed) Verdict(now time.Time) probe.Verdict {
	ns := transitions.Normalize(p.Entity, now)
	v := probe.Verdict{State: ns, Undecided: p.Entity.Health == state.HealthUnknown, Display: transitions.Display(p.Entity, ns), Reasons: ns.Reasons}
	if p.Checked {
		v.Evidence = p.Judged.Result.Evidence()
	}
	switch {
	case p.Written:
		v.Notes = append(v.Notes, fmt.Sprintf("recorded: health %s, delivery %s", p.Entity.Health, p.Entity.Delivery))
	case p.Judged.Changed && !p.Recording:
		v.Notes = append(v.Notes, "not recorded: a read-only probe changes nothing (--record records what it found)")
	}
	for _, a := range p.Judged.Acts {
		v.Notes = append(v.Notes, fmt.Sprintf("due now: %s -> %s (%s), which the daemon's %s makes", a.From, a.To, a.Reason.Code, actJob(a.Kind)))
	}
	if !p.Judged.Next.IsZero() {
		v.Notes = append(v.Notes, "next judgement due at "+state.Stamp(p.Judged.Next))
	}
	return v
}

// actJob names the job that makes an act of kind k.
func actJob(k judge.ActKind) string {
	if k == judge.ActPhantom {
		return "reap_phantoms"
	}
	return "enforce_terminal"
}

// ProbeOne sees and judges one entity of this host now, as a sweep does;
// without record nothing is written, so no dismissal or snooze is affected.
// It ignores failure_window: whoever asks for one entity wants its state now.
func (r *Reaper) ProbeOne(ctx context.Context, typ, id string, record bool) (Probed, error) {
	// Twice at most: a transition between the read and the write makes the store
	// skip the write, and the entity is judged once more.
	for attempt := 0; attempt < 2; attempt++ {
		p, retry, err := r.probeOnce(ctx, typ, id, record)
		if err != nil || !retry {
			return p, err
		}
	}
	return Probed{}, fmt.Errorf("probe %s/%s: its lifecycle kept changing while it was probed; try again", typ, id)
}

// probeOnce reads, sees, judges and (with record) records one entity; retry
// says the stored row moved on since it was read.
func (r *Reaper) probeOnce(ctx context.Context, typ, id string, record bool) (Probed, bool, error) {
	e, err := r.Store.Get(ctx, typ, id)
	if err != nil {
		return Probed{}, false, err
	}
	name := e.Type + "/" + e.ID
	switch {
	case e.HostID != r.HostID && e.HostID != "":
		return Probed{}, false, fmt.Errorf("%s: %w (%s, this is %s): only that host's watchdog can check its process", name, ErrOtherHost, e.HostID, r.HostID)
	case e.Lifecycle == nil:
		return Probed{}, false, fmt.Errorf("%s: %w: a legacy entity (no lifecycle) is outside the state model", name, ErrNotProbed)
	case judge.ByCron(&e):
		return Probed{}, false, fmt.Errorf("%s: %w: schedules are judged by their cron spec (check_schedules), not by a probe", name, ErrNotProbed)
	}

	parents := newParentCache(ctx, r.Store)
	s, err := r.judgeOne(ctx, e, parents.terminal(e), record, judge.Event{})
	if err != nil {
		return Probed{}, false, fmt.Errorf("probe %s: %w", name, err)
	}
	if s.interrupted {
		return Probed{}, false, fmt.Errorf("probe %s: artifact check interrupted: %w", name, context.Cause(ctx))
	}
	if record && s.v.Changed && !s.written {
		// A transition landed, or another writer stored the same finding first:
		// a fresh read tells which.
		cur, err := r.Store.Get(ctx, typ, id)
		if err != nil {
			return Probed{}, false, err
		}
		if cur.LastSeq != e.LastSeq {
			return Probed{}, true, nil
		}
	}
	p := Probed{Entity: s.v.Applied(e), Checked: s.seen.Probed, Judged: s.v, Written: s.written, Recording: record}
	if s.written {
		p.Entity.UpdatedAt = s.v.Observation.At
	}
	return p, false, nil
}
