package reaper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// ErrOtherHost says an entity was recorded on another host: its pid means
// nothing here, and only that host's watchdog may judge it.
var ErrOtherHost = errors.New("recorded on another host")

// ErrNotProbed says an entity is not something a probe judges: a legacy
// entity (no lifecycle) or a schedule (check_schedules judges those by
// their cron spec).
var ErrNotProbed = errors.New("not probed")

// Probed is what ProbeOne found about one entity.
type Probed struct {
	// Entity is the entity with the probe's findings applied: what is now
	// stored when they were written, and what would be otherwise (the
	// stored reasons of an unchanged entity carry the evidence details of
	// the probe that wrote them, these carry today's ages).
	Entity store.Entity
	// Result is the probe's classification. Meaningful only when Checked.
	Result probe.Result
	// Checked says the entity had something of its own to probe (a pid,
	// a heartbeat, files); a show or a team has not, and reads ok.
	Checked bool
	// Written says the findings differed from the stored ones and were
	// recorded.
	Written bool
}

// Verdict is what `watchdog probe --entity` reports, in the ad-hoc
// probe's shape. Health unknown is the probe's "could not decide" (no pid
// recorded, permission denied, and no heartbeat to go by), as an unknown
// liveness is for the ad-hoc probe.
func (p Probed) Verdict(now time.Time) probe.Verdict {
	ns := transitions.View(p.Entity, now)
	v := probe.Verdict{State: ns, Undecided: p.Entity.Health == state.HealthUnknown, Display: transitions.Display(p.Entity, ns), Reasons: ns.Reasons}
	if p.Checked {
		v.Evidence = p.Result.Evidence()
	}
	if p.Written {
		v.Notes = []string{fmt.Sprintf("recorded: health %s, delivery %s", p.Entity.Health, p.Entity.Delivery)}
	}
	return v
}

// ProbeOne probes one entity of this host now and records what changed,
// exactly as a sweep does for it (same probe, same thresholds, same
// observation, written only when health, delivery, reasons or the death
// time changed). It probes the entity even when it ended longer ago than
// failure_window: whoever asks for one entity wants its state now, and a
// process still alive after its recorded end is worth seeing at any age.
//
// Errors: store.ErrNotFound, ErrOtherHost, ErrNotProbed (each wrapped with
// the entity's name), or a store failure.
func (r *Reaper) ProbeOne(ctx context.Context, typ, id string) (Probed, error) {
	// Twice at most: a transition landing between the read and the write
	// makes the store skip the write (the observation judged the old
	// lifecycle), and the entity is then read and judged once more.
	for attempt := 0; attempt < 2; attempt++ {
		p, retry, err := r.probeOnce(ctx, typ, id)
		if err != nil || !retry {
			return p, err
		}
	}
	return Probed{}, fmt.Errorf("probe %s/%s: its lifecycle kept changing while it was probed; try again", typ, id)
}

// probeOnce reads, probes and records one entity; retry says the write was
// skipped because the stored row moved on since it was read.
func (r *Reaper) probeOnce(ctx context.Context, typ, id string) (Probed, bool, error) {
	e, err := r.Store.Get(ctx, typ, id)
	if err != nil {
		return Probed{}, false, err
	}
	name := e.Type + "/" + e.ID
	switch {
	case e.HostID != r.HostID && e.HostID != "":
		host := e.HostID
		if host == "" {
			host = "no host"
		}
		return Probed{}, false, fmt.Errorf("%s: %w (%s, this is %s): only that host's watchdog can check its process", name, ErrOtherHost, host, r.HostID)
	case e.Lifecycle == nil:
		return Probed{}, false, fmt.Errorf("%s: %w: a legacy entity (no lifecycle) is outside the state model", name, ErrNotProbed)
	case e.Type == "schedule":
		return Probed{}, false, fmt.Errorf("%s: %w: schedules are judged by their cron spec (check_schedules), not by a probe", name, ErrNotProbed)
	}

	parents := newParentCache(ctx, r.Store)
	s, err := r.probeAndRecord(ctx, e, parents.terminal(e))
	if err != nil {
		return Probed{}, false, fmt.Errorf("probe %s: %w", name, err)
	}
	if s.changed && !s.written {
		// Either a transition landed since the read, or another writer
		// (the daemon's sweep) stored the same finding first; a fresh
		// read tells which, and costs one probe.
		cur, err := r.Store.Get(ctx, typ, id)
		if err != nil {
			return Probed{}, false, err
		}
		if cur.LastSeq != e.LastSeq {
			return Probed{}, true, nil
		}
	}
	p := Probed{Entity: e, Result: s.res, Checked: probed(e), Written: s.written}
	p.Entity.Health, p.Entity.Delivery, p.Entity.Reasons = s.obs.Health, s.obs.Delivery, s.obs.Reasons
	p.Entity.HealthSince, p.Entity.DeadSince = s.obs.HealthSince, s.obs.DeadSince
	if s.written {
		p.Entity.UpdatedAt = s.obs.At
	}
	return p, false, nil
}
