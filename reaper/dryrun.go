package reaper

import (
	"context"

	"go.uber.org/zap"

	"watchdog/judge"
	"watchdog/state"
	"watchdog/store"
)

// logFlag tells the log, once, that a sweep flagged e: a warning, since
// nothing will end it but a person.
func (r *Reaper) logFlag(e store.Entity, obs store.Observation) {
	if _, before := judge.Flagged(&e); before {
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

// dryStore applies a dry run's observations in memory, so what it lists is
// what a real run would find.
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
	if e.LastSeq != o.SeenSeq || (o.DeadSince.IsZero() && o.SeenDeadSince.IsZero() && !e.DeadSince.IsZero()) {
		return false, nil // refused as the store refuses it (Observation.SeenDeadSince)
	}
	s.seen[typ+"/"+id] = judge.Recorded(e, o)
	return true, nil
}
