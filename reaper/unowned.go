package reaper

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/unixtime"
)

// A dead process gets a fate whatever its entity's type. The types whose
// graph has an end for it (DeadTarget) are ended by enforce_terminal; the
// others (a play, a show, a team, or a process type in a state with no
// reachable end) cannot be ended by the watchdog without inventing an
// outcome, so once terminal_grace has passed they are flagged instead:
// the probe's process_dead finding becomes system.health.process_dead_unowned,
// critical, whose message says since when and which command records an
// end. It is decided in the sweep's per-entity step, after the probe,
// from the recorded death alone, so every later probe decides the same
// and nothing writes it away until the entity moves or the process is
// found alive.

// unownedDeath is the flag for e when its process is dead (res, now), it
// is open, its type has no end for a dead process from its lifecycle, and
// the death recorded at deadSince is past terminal_grace; ok false
// otherwise.
func (r *Reaper) unownedDeath(e store.Entity, res probe.Result, deadSince, now time.Time) (state.StateReason, bool) {
	// An entity with an outcome (a failed show, whose graph keeps it open
	// until archived) has had its end recorded: nothing left to ask.
	if e.Lifecycle == nil || e.Terminal || finished(e) || res.Liveness != probe.Dead || deadSince.IsZero() ||
		deadTargetFrom(e) != "" || now.Sub(deadSince) < r.Settings.TerminalGrace {
		return state.StateReason{}, false
	}
	from := *e.Lifecycle
	// The moment comes last: readers append its age ("…, 12m ago").
	msg := fmt.Sprintf("a %s has no end for a dead process: %s; process dead since %s", e.Type, endHint(e, from), state.Stamp(deadSince))
	f := state.Observed(state.SystemHealthProcessDeadUnowned, msg)
	f.Since = unixtime.Of(deadSince)
	// The probe's own finding of the death carries the pid evidence: the
	// flag takes it over, one item for one cause.
	for _, p := range res.Reasons {
		if p.Code == state.RunHealthProcessDead {
			f.Evidence = p.Evidence
		}
	}
	return f, true
}

// flagUnowned replaces the probe's death finding in reasons by the flag f
// (appending it when the probe gave none).
func flagUnowned(reasons []state.StateReason, f state.StateReason) []state.StateReason {
	out := make([]state.StateReason, 0, len(reasons)+1)
	placed := false
	for _, r := range reasons {
		if r.Code == state.RunHealthProcessDead || r.Code == state.SystemHealthProcessDeadUnowned {
			if !placed {
				out = append(out, f)
				placed = true
			}
			continue
		}
		out = append(out, r)
	}
	if !placed {
		out = append(out, f)
	}
	return out
}

// endHint names the command that records an end for e from lifecycle from:
// a failing outcome where the graph has an edge to one, else any outcome.
func endHint(e store.Entity, from string) string {
	g, err := transitions.Lookup(e.Type)
	if err != nil {
		return "record its end"
	}
	targets := g.Targets(from)
	to := ""
	for _, want := range []string{"failed", "aborted", "cancelled", "closed"} {
		if slices.Contains(targets, want) && g.Outcome(want) != "" {
			to = want
			break
		}
	}
	if to == "" {
		for _, t := range targets {
			if g.Outcome(t) != "" {
				to = t
				break
			}
		}
	}
	if to == "" && slices.Contains(targets, "disabled") {
		// A schedule has no end: what stops it is being disabled.
		return fmt.Sprintf("disable it (`watchdog transition %s/%s disabled`) or re-register it with a live pid", e.Type, e.ID)
	}
	if to == "" {
		return fmt.Sprintf("its lifecycle %s has no end to record; re-register it with a live pid or none", from)
	}
	cmd := fmt.Sprintf("watchdog transition %s/%s %s", e.Type, e.ID, to)
	if to == "failed" {
		cmd += " --reason " + string(state.RunFailedOperator)
	}
	return "record one, e.g. `" + cmd + "`"
}

// flagged returns e's flag when its stored findings carry one.
func flagged(e store.Entity) (state.StateReason, bool) {
	for _, r := range e.Reasons {
		if r.Code == state.SystemHealthProcessDeadUnowned {
			return r, true
		}
	}
	return state.StateReason{}, false
}

// logFlag tells the log, once, that a sweep flagged e: a warning, since
// nothing will end it but a person.
func (r *Reaper) logFlag(e store.Entity, obs store.Observation) {
	if _, before := flagged(e); before {
		return
	}
	for _, f := range obs.Reasons {
		if f.Code == state.SystemHealthProcessDeadUnowned {
			r.log().Warn("process dead and its type has no end for it: flagged for the operator",
				zap.String("entity", e.Type+"/"+e.ID), zap.String("lifecycle", e.LifecycleOr("")),
				zap.String("reason", string(f.Code)), zap.String("message", f.Message))
		}
	}
}

// dryStore is a dry run's view of the store: the reads of the real one
// with the observations this run made applied in memory, never written.
// A dry run probes first through it, so that what it lists is what a
// real run would find, even on a store no sweep has seen.
type dryStore struct {
	Store
	seen map[string]store.Entity
}

func newDryStore(st Store) *dryStore { return &dryStore{Store: st, seen: map[string]store.Entity{}} }

func (s *dryStore) Get(ctx context.Context, typ, id string) (store.Entity, error) {
	if e, ok := s.seen[typ+"/"+id]; ok {
		return e, nil
	}
	return s.Store.Get(ctx, typ, id)
}

// List reads the real store and applies the observations; DeadOnly is
// judged on the result, since a death may be this run's own finding.
func (s *dryStore) List(ctx context.Context, f store.Filter) ([]store.Entity, error) {
	deadOnly := f.DeadOnly
	f.DeadOnly = false
	list, err := s.Store.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := list[:0]
	for _, e := range list {
		if o, ok := s.seen[e.Type+"/"+e.ID]; ok {
			e = o
		}
		if deadOnly && e.DeadSince.IsZero() {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// RecordObservation keeps o in memory, as the store would have written it.
func (s *dryStore) RecordObservation(ctx context.Context, typ, id string, o store.Observation) (bool, error) {
	e, err := s.Get(ctx, typ, id)
	if err != nil {
		return false, err
	}
	if e.LastSeq != o.SeenSeq {
		return false, nil
	}
	e.Health, e.Delivery, e.Reasons, e.HealthSince, e.DeadSince, e.UpdatedAt = o.Health, o.Delivery, o.Reasons, o.HealthSince, o.DeadSince, o.At
	s.seen[typ+"/"+id] = e
	return true, nil
}
