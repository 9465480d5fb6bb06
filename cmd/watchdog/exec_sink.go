package main

import (
	"context"
	"errors"

	"watchdog/client"
	"watchdog/config"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// execSink is where exec records its run: the database directly, or a
// daemon's API with --server.
type execSink interface {
	register(ctx context.Context, r wire.Register) error
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

func (s *localSink) register(ctx context.Context, r wire.Register) error {
	reg, err := r.Registration(transitions.ActorExec)
	if err != nil {
		return err
	}
	_, err = s.w.Register(ctx, reg)
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
	host := probe.NewHost()
	rp := &reaper.Reaper{Store: s.st, Writer: s.w, Prober: host, HostID: host.HostID(), Settings: settingsFrom(config.Default())}
	_, _ = rp.ProbeOne(ctx, typ, id)
	return nil
}

func (s *localSink) close() { s.st.Close() }

type remoteSink struct{ c *client.Client }

func (s remoteSink) register(ctx context.Context, r wire.Register) error {
	_, _, err := s.c.Register(ctx, r)
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
