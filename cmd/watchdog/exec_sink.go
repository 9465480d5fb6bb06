package main

import (
	"context"
	"errors"

	"watchdog/client"
	"watchdog/config"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// execSink is where exec records its run: the database directly, or a
// daemon's API with --server.
type execSink interface {
	// lookup reads an existing entity's lifecycle ("" for legacy).
	lookup(ctx context.Context, typ, id string) (lifecycle string, found bool, err error)
	// register registers the run; from is the lifecycle of the entity it
	// takes over ("" for a new one), which it then moves to running.
	register(ctx context.Context, r wire.Register, from string) error
	finish(ctx context.Context, typ, id string, t wire.Transition) error
	close()
}

func openExecSink(ctx context.Context, o execOptions) (execSink, error) {
	if o.server != "" {
		c, err := dialServer(o.server)
		if err != nil {
			return nil, err
		}
		return remoteSink{c}, nil
	}
	st, err := openStore(ctx, o.db, true)
	if err != nil {
		return nil, err
	}
	return &localSink{st: st, w: newWriter(st)}, nil
}

type localSink struct {
	st *store.SQLite
	w  *transitions.Writer
}

func (s *localSink) lookup(ctx context.Context, typ, id string) (string, bool, error) {
	e, err := s.st.Get(ctx, typ, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return e.LifecycleOr(""), true, nil
}

func (s *localSink) register(ctx context.Context, r wire.Register, from string) error {
	reg, err := r.Registration(transitions.ActorExec)
	if err != nil {
		return err
	}
	if _, err = s.w.Register(ctx, reg); err != nil || from == "" {
		return err
	}
	_, err = s.w.Transition(ctx, transitions.Request{Type: r.Type, ID: r.ID, To: "running", ExpectFrom: from, Actor: transitions.ActorExec})
	return err
}

func (s *localSink) finish(ctx context.Context, typ, id string, t wire.Transition) error {
	if t.To == "" {
		return errors.New("the type has no terminal state for this end")
	}
	req, err := t.Request(typ, id, transitions.ActorExec)
	if err != nil {
		return err
	}
	if _, err = s.w.Transition(ctx, req); err != nil {
		return err
	}
	// Judge the ended entity now (health ok or orphaned, delivery from the
	// contract), as the daemon's next sweep would, so `watchdog status`
	// right after exec shows the whole state even with no daemon running.
	// Best effort: the end is already recorded.
	host := localHost()
	rp := &reaper.Reaper{Store: s.st, Writer: s.w, Prober: host, HostID: host.HostID(), Settings: oneShotSettings(config.Default())}
	_, _ = rp.ProbeOne(ctx, typ, id)
	return nil
}

func (s *localSink) close() { s.st.Close() }

type remoteSink struct{ c *client.Client }

func (s remoteSink) lookup(ctx context.Context, typ, id string) (string, bool, error) {
	e, err := s.c.Entity(ctx, typ, id)
	if errors.Is(err, transitions.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if e.Lifecycle == nil {
		return "", true, nil
	}
	return *e.Lifecycle, true, nil
}

func (s remoteSink) register(ctx context.Context, r wire.Register, from string) error {
	if _, _, err := s.c.Register(ctx, r); err != nil || from == "" {
		return err
	}
	_, err := s.c.Transition(ctx, r.Type, r.ID, wire.Transition{To: "running", ExpectFrom: from, Actor: transitions.ActorExec})
	return err
}

func (s remoteSink) finish(ctx context.Context, typ, id string, t wire.Transition) error {
	if t.To == "" {
		return errors.New("the type has no terminal state for this end")
	}
	_, err := s.c.Transition(ctx, typ, id, t)
	return err
}

func (remoteSink) close() {}
