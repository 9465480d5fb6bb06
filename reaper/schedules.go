package reaper

import (
	"context"
	"errors"
	"fmt"

	"watchdog/judge"
	"watchdog/store"
)

// CheckSchedules judges every schedule entity this daemon owns and records what changed.
func (r *Reaper) CheckSchedules(ctx context.Context) (Report, error) {
	rep := Report{Job: JobCheckSchedules}
	list, err := r.Store.List(ctx, store.Filter{Type: "schedule", HostID: r.HostID, OpenOnly: true, AlsoHostless: r.leads()})
	if err != nil {
		return rep, fmt.Errorf("check_schedules: %w", err)
	}
	for _, e := range list {
		if e.HostID == "" && !r.leads() {
			return rep, nil // the new leader's run does the rest
		}
		rep.Checked++
		wrote, err := r.checkSchedule(ctx, e)
		switch {
		case errors.As(err, new(*judge.CronError)):
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

// CheckScheduleEntity is check_schedules for one schedule entity; one of
// another host or ended is left alone (false, nil).
func (r *Reaper) CheckScheduleEntity(ctx context.Context, e store.Entity) (written bool, err error) {
	r.steps.RLock()
	defer r.steps.RUnlock()
	return r.checkScheduleEntity(ctx, e)
}

func (r *Reaper) checkScheduleEntity(ctx context.Context, e store.Entity) (bool, error) {
	switch {
	case !judge.ByCron(&e):
		return false, fmt.Errorf("%s/%s: not a schedule", e.Type, e.ID)
	case !r.owns(e) || e.Terminal:
		return false, nil
	}
	return r.checkSchedule(ctx, e)
}

// checkSchedule is the one step of check_schedules for a schedule; a cron
// spec that does not parse is a *judge.CronError and records nothing.
func (r *Reaper) checkSchedule(ctx context.Context, e store.Entity) (bool, error) {
	if err := judge.CheckCron(e); err != nil {
		return false, err
	}
	s, err := r.judgeOne(ctx, e, false, false, judge.Event{})
	if err != nil {
		return false, err
	}
	return r.recordSchedule(ctx, e, s.v)
}

func (r *Reaper) recordSchedule(ctx context.Context, e store.Entity, v judge.Verdict) (bool, error) {
	if !v.Changed {
		return false, nil
	}
	wrote, err := r.Store.RecordObservation(ctx, e.Type, e.ID, v.Observation)
	if err != nil {
		return false, fmt.Errorf("record schedule %s: %w", e.ID, err)
	}
	if wrote {
		r.logFlag(e, v.Observation)
	}
	return wrote, nil
}
