package reaper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"watchdog/cronspec"
	"watchdog/jobs"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/unixtime"
)

// judgeSchedule decides a schedule's health at now: the first fire time
// after its last fire, or after it was last enabled when that is later, is
// due while within misfire_grace and misfired after it. Paused and disabled
// schedules are ok: nobody expects them to fire, and the fires they skipped
// are not owed once they are enabled again (else every resume would page).
func judgeSchedule(e store.Entity, grace time.Duration, now time.Time) (state.Health, []state.StateReason, error) {
	if e.LifecycleOr("") != "enabled" || e.ScheduleCron == "" {
		return state.HealthOK, nil, nil
	}
	sched, err := cronspec.Parser.Parse(e.ScheduleCron)
	if err != nil {
		return state.HealthUnknown, nil, fmt.Errorf("schedule %s: cron %q: %w", e.ID, e.ScheduleCron, err)
	}
	last := e.ScheduleLastFiredAt
	if last.IsZero() {
		last = e.CreatedAt
	}
	// A lifecycle change after registration to enabled is a resume. At
	// registration LifecycleAt is the registration time and says nothing:
	// the reported last fire stands, so fires missed before are owed.
	if e.LifecycleAt.After(e.CreatedAt) && e.LifecycleAt.After(last) {
		last = e.LifecycleAt
	}
	next := sched.Next(last)
	if next.After(now) {
		return state.HealthOK, nil, nil
	}
	late := now.Sub(next)
	ev := state.EvidenceRef{Kind: state.EvidenceToolResult, ID: "schedule/" + e.ID,
		Detail: fmt.Sprintf("cron %q: expected a fire at %s, last fire %s", e.ScheduleCron, next.UTC().Format(time.RFC3339), lastFired(e))}
	if late <= grace {
		return state.HealthDue, []state.StateReason{state.Observed(state.ScheduleHealthDue, "fire time passed, within misfire_grace", ev)}, nil
	}
	// The moment, not the lateness: a stored message that grows with the
	// clock would be rewritten at every check (ages are rendered when read).
	r := state.Observed(state.ScheduleHealthMisfired,
		fmt.Sprintf("no fire since its time %s (misfire_grace %s)", state.Stamp(next), grace), ev)
	r.Since = unixtime.Of(next)
	return state.HealthMisfired, []state.StateReason{r}, nil
}

func lastFired(e store.Entity) string {
	if e.ScheduleLastFiredAt.IsZero() {
		return "never"
	}
	return e.ScheduleLastFiredAt.UTC().Format(time.RFC3339)
}

// CheckSchedules judges every schedule entity of this host, and the
// host-less ones while this daemon leads (due, misfired, ok), and records
// what changed.
func (r *Reaper) CheckSchedules(ctx context.Context) (Report, error) {
	rep := Report{Job: jobs.CheckSchedules}
	list, err := r.Store.List(ctx, store.Filter{Type: "schedule", HostID: r.HostID, OpenOnly: true, AlsoHostless: r.leads()})
	if err != nil {
		return rep, fmt.Errorf("check_schedules: %w", err)
	}
	now := r.now()
	for _, e := range list {
		if e.HostID == "" && !r.leads() {
			return rep, nil // the new leader's run does the rest
		}
		rep.Checked++
		wrote, err := r.checkSchedule(ctx, e, now)
		switch {
		case errors.As(err, new(badSchedule)):
			r.log().Warn("unreadable schedule", errField(err))
			continue
		case err != nil:
			return rep, fmt.Errorf("check_schedules: %w", err)
		}
		if wrote {
			rep.Written++
		}
	}
	return rep, nil
}

// badSchedule marks a schedule whose cron spec does not parse: the job
// logs it and goes on, and nothing is recorded.
type badSchedule struct{ err error }

func (b badSchedule) Error() string { return b.err.Error() }
func (b badSchedule) Unwrap() error { return b.err }

// CheckScheduleEntity is check_schedules for one schedule entity: judge it
// now (due, misfired, ok) and record the finding when it changed. A cron
// spec that does not parse is an error and records nothing, as is an
// entity that is not a schedule; a schedule of another host or ended is
// left alone (false, nil).
func (r *Reaper) CheckScheduleEntity(ctx context.Context, e store.Entity) (written bool, err error) {
	switch {
	case e.Type != "schedule":
		return false, fmt.Errorf("%s/%s: not a schedule", e.Type, e.ID)
	case !r.owns(e) || e.Terminal:
		return false, nil
	}
	return r.checkSchedule(ctx, e, r.now())
}

// checkSchedule is the one step of check_schedules for a schedule.
func (r *Reaper) checkSchedule(ctx context.Context, e store.Entity, now time.Time) (bool, error) {
	grace := r.Settings.MisfireGrace
	if grace <= 0 {
		grace = DefaultSettings.MisfireGrace
	}
	health, reasons, err := judgeSchedule(e, grace, now)
	if err != nil {
		return false, badSchedule{err}
	}
	if reasons == nil {
		reasons = []state.StateReason{}
	}
	deadSince := e.DeadSince
	if e.PID > 0 && r.Prober != nil && e.LifecycleOr("") == "enabled" {
		// A schedule that names a process (a long-running scheduler, say)
		// has its liveness judged too: a dead one gets the fate of every
		// dead process of a type without a dead-process end, the flag that
		// asks the operator (issue 14), beside the cron's own findings.
		res := r.Prober.Probe(ctx, target(e, false), r.Settings.Probe, now)
		switch res.Liveness {
		case probe.Dead:
			if deadSince.IsZero() {
				deadSince = now
			}
			death := res.Reasons
			if f, ok := r.unownedDeath(e, res, deadSince, now); ok {
				death = flagUnowned(death, f)
			}
			health, reasons = state.HealthProcessDead, append(slices.Clone(death), reasons...)
		case probe.Alive:
			deadSince = time.Time{}
		}
	} else {
		deadSince = time.Time{} // paused or disabled: its process is not asked for
	}
	for i := range reasons {
		reasons[i].EntityType, reasons[i].EntityID = e.Type, e.ID
	}
	state.CarryOnsets(reasons, e.Reasons, now)
	if health == e.Health && deadSince.Equal(e.DeadSince) && state.SameFindings(reasons, e.Reasons) {
		return false, nil
	}
	obs := store.Observation{Health: health, Delivery: e.Delivery, Reasons: reasons, HealthSince: now, DeadSince: deadSince, SeenSeq: e.LastSeq, At: now}
	if health == e.Health {
		obs.HealthSince = e.HealthSince
	}
	wrote, err := r.Store.RecordObservation(ctx, e.Type, e.ID, obs)
	if err != nil {
		return false, fmt.Errorf("record schedule %s: %w", e.ID, err)
	}
	if wrote {
		r.logFlag(e, obs)
	}
	return wrote, nil
}
