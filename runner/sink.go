package runner

import (
	"context"
	"errors"
	"os"
	"time"

	"watchdog/client"
	"watchdog/config"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/unixtime"
	"watchdog/wire"
)

// Sink is where the runner records its run: the database directly
// (LocalSink), or a daemon's API (RemoteSink).
type Sink interface {
	// Lookup reads an existing entity's lifecycle ("" for legacy).
	Lookup(ctx context.Context, typ, id string) (lifecycle string, found bool, err error)
	// Register registers the run; from is the lifecycle of the entity it
	// takes over ("" for a new one), which it then moves to running.
	Register(ctx context.Context, r wire.Register, from string) error
	// Finish records the end.
	Finish(ctx context.Context, typ, id string, t wire.Transition) error
	Close()
}

var errNoTerminal = errors.New("the type has no terminal state for this end")

// LocalSink records into a store of this host.
type LocalSink struct {
	st   *store.SQLite
	w    *transitions.Writer
	host *probe.Host
}

// NewLocalSink records into st, identifying processes (and, after the
// end, probing the entity) through host. Close closes st.
func NewLocalSink(st *store.SQLite, host *probe.Host) *LocalSink {
	return &LocalSink{st: st, w: &transitions.Writer{Store: st, Now: time.Now, Ident: host}, host: host}
}

// Lookup implements Sink.
func (s *LocalSink) Lookup(ctx context.Context, typ, id string) (string, bool, error) {
	e, err := s.st.Get(ctx, typ, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return e.LifecycleOr(""), true, nil
}

// Register implements Sink; the write path fills in the child's identity,
// start ticks included.
func (s *LocalSink) Register(ctx context.Context, r wire.Register, from string) error {
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

// Finish implements Sink, then judges the ended entity.
func (s *LocalSink) Finish(ctx context.Context, typ, id string, t wire.Transition) error {
	if t.To == "" {
		return errNoTerminal
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
	// right after the run shows the whole state even with no daemon
	// running. Best effort: the end is already recorded.
	rp := reaper.NewOneShot(s.st, s.w, s.host, config.Default())
	_, _ = rp.ProbeOne(ctx, typ, id)
	return nil
}

// Close implements Sink.
func (s *LocalSink) Close() { s.st.Close() }

// RemoteSink records through a daemon's API.
type RemoteSink struct {
	c    *client.Client
	host *probe.Host
}

// NewRemoteSink records through c; host identifies the child, as the
// daemon may run on another host.
func NewRemoteSink(c *client.Client, host *probe.Host) RemoteSink {
	return RemoteSink{c: c, host: host}
}

// Lookup implements Sink.
func (s RemoteSink) Lookup(ctx context.Context, typ, id string) (string, bool, error) {
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

// Register implements Sink. The daemon may be on another host: this one's
// identity of the child is recorded here.
func (s RemoteSink) Register(ctx context.Context, r wire.Register, from string) error {
	r.HostID = s.host.HostID()
	r.BootID, _ = s.host.BootID()
	if st, _, err := s.host.StartOf(r.PID); err == nil {
		r.PIDStartTime = unixtime.Of(st)
	}
	if st, _, err := s.host.StartOf(os.Getpid()); err == nil {
		r.SupervisorStartTime = unixtime.Of(st)
	}
	if _, _, err := s.c.Register(ctx, r); err != nil || from == "" {
		return err
	}
	_, err := s.c.Transition(ctx, r.Type, r.ID, wire.Transition{To: "running", ExpectFrom: from, Actor: transitions.ActorExec})
	return err
}

// Finish implements Sink.
func (s RemoteSink) Finish(ctx context.Context, typ, id string, t wire.Transition) error {
	if t.To == "" {
		return errNoTerminal
	}
	_, err := s.c.Transition(ctx, typ, id, t)
	return err
}

// Close implements Sink.
func (RemoteSink) Close() {}
