package judge

import (
	"fmt"
	"slices"
	"time"

	"watchdog/internal/cronspec"
	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// CronError says a schedule's cron spec does not parse: nothing is judged for it.
type CronError struct {
	ID, Spec string
	Err      error
}

func (c *CronError) Error() string {
	return fmt.Sprintf("schedule %s: cron %q: %v", c.ID, c.Spec, c.Err)
}

func (c *CronError) Unwrap() error { return c.Err }

// CheckCron returns a *CronError when e's cron spec does not parse.
func CheckCron(e store.Entity) error {
	if e.ScheduleCron == "" {
		return nil
	}
	if _, err := cronspec.Parser.Parse(e.ScheduleCron); err != nil {
		return &CronError{ID: e.ID, Spec: e.ScheduleCron, Err: err}
	}
	return nil
}

// cronHealth decides a schedule's health at now. Fires skipped while paused
// are not owed once enabled again (else every resume would page).
func cronHealth(e store.Entity, s Settings, now time.Time) (state.Health, []state.StateReason) {
	next, misfire := MisfireAt(&e, s)
	if next.IsZero() || next.After(now) {
		return state.HealthOK, nil
	}
	ev := state.EvidenceRef{Kind: state.EvidenceToolResult, ID: "schedule/" + e.ID,
		Detail: fmt.Sprintf("cron %q: expected a fire at %s, last fire %s", e.ScheduleCron, next.UTC().Format(time.RFC3339), lastFired(e)),
		Times:  []state.EvidenceTime{state.TimeOf(next.UTC().Format(time.RFC3339), next)}}
	if !e.ScheduleLastFiredAt.IsZero() {
		ev.Times = append(ev.Times, state.TimeOf(lastFired(e), e.ScheduleLastFiredAt))
	}
	if !now.After(misfire) {
		return state.HealthDue, []state.StateReason{state.Observed(state.ScheduleHealthDue, "fire time passed, within misfire_grace", ev)}
	}
	// The moment, not the lateness: a message growing with the clock is rewritten every check.
	r := state.Observed(state.ScheduleHealthMisfired,
		fmt.Sprintf("no fire since its time %s (misfire_grace %s)", state.Stamp(next), s.misfireGrace()), ev)
	r.Since = unixtime.Of(next)
	return state.HealthMisfired, []state.StateReason{r}
}

func lastFired(e store.Entity) string {
	if e.ScheduleLastFiredAt.IsZero() {
		return "never"
	}
	return e.ScheduleLastFiredAt.UTC().Format(time.RFC3339)
}

// judgeSchedule is a schedule's judgement: its cron's findings and, while
// enabled, its process's liveness (a dead one is flagged, ADR-0022).
func judgeSchedule(e store.Entity, res Result, probed bool, s Settings, now time.Time) (store.Observation, bool) {
	health, reasons := cronHealth(e, s, now)
	dead := time.Time{} // paused or disabled: its process is not asked for
	if probed {
		dead = deadSince(e.DeadSince, res.Liveness, now)
		if res.Liveness == probe.Dead {
			death := res.Reasons
			if f, ok := unownedDeath(e, res, dead, s, now); ok {
				death = flagUnowned(death, f)
			}
			health, reasons = state.HealthProcessDead, append(slices.Clone(death), reasons...)
		}
	}
	if reasons == nil {
		reasons = []state.StateReason{}
	}
	for i := range reasons {
		reasons[i].EntityType, reasons[i].EntityID = e.Type, e.ID
	}
	state.CarryOnsets(reasons, e.Reasons, now)
	obs := store.Observation{Health: health, Delivery: e.Delivery, Reasons: reasons, HealthSince: now, DeadSince: dead, SeenSeq: e.LastSeq, SeenDeadSince: e.DeadSince, At: now}
	if health == e.Health {
		obs.HealthSince = e.HealthSince
	}
	return obs, health != e.Health || !dead.Equal(e.DeadSince) || !state.SameFindings(reasons, e.Reasons)
}
