package runner

import (
	"context"
	"errors"

	"watchdog/transitions"
	"watchdog/wire"
)

// Sink is where the runner records its run: the part of target.Target it
// uses (target.Local or target.Remote).
type Sink interface {
	Entity(ctx context.Context, typ, id string) (wire.Entity, error)
	Register(ctx context.Context, r wire.Register, actor string) (wire.Entity, bool, error)
	Transition(ctx context.Context, typ, id string, t wire.Transition, defaultActor string) (wire.TransitionResult, error)
	Settle(ctx context.Context, typ, id string)
	Close() error
}

var errNoTerminal = errors.New("the type has no terminal state for this end")

// lookup reads an existing entity's lifecycle ("" for legacy).
func lookup(ctx context.Context, s Sink, typ, id string) (lifecycle string, found bool, err error) {
	e, err := s.Entity(ctx, typ, id)
	if errors.Is(err, transitions.ErrNotFound) {
		return "", false, nil
	}
	if err != nil || e.Lifecycle == nil {
		return "", err == nil, err
	}
	return *e.Lifecycle, true, nil
}

// register registers the run; from is the lifecycle of the entity it takes
// over ("" for a new one), which it then moves to running.
func register(ctx context.Context, s Sink, r wire.Register, from string) error {
	if _, _, err := s.Register(ctx, r, transitions.ActorExec); err != nil || from == "" {
		return err
	}
	_, err := s.Transition(ctx, r.Type, r.ID, wire.Transition{To: "running", ExpectFrom: from, Actor: transitions.ActorExec}, transitions.ActorExec)
	return err
}

// finish records the end, then has the sink judge the ended entity.
func finish(ctx context.Context, s Sink, typ, id string, t wire.Transition) error {
	if t.To == "" {
		return errNoTerminal
	}
	if _, err := s.Transition(ctx, typ, id, t, transitions.ActorExec); err != nil {
		return err
	}
	s.Settle(ctx, typ, id)
	return nil
}
