// Package target is where a CLI command's reads and writes go: this host's
// store (Local) or a daemon's API (Remote), in the API's wire shapes.
package target

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"watchdog/attention"
	"watchdog/cmd/watchdog/internal/client"
	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// Target is what the CLI's writing and reading commands go through. It
// sits beside its two implementations, whose sameness is its point.
type Target interface {
	// Entity reads one entity; a missing one is transitions.ErrNotFound.
	Entity(ctx context.Context, typ, id string) (wire.Entity, error)
	// Register registers (or updates) an entity and reports whether it was
	// created; a daemon records its request's principal, not actor.
	Register(ctx context.Context, r wire.Register, actor string) (wire.Entity, bool, error)
	// Transition asks for a lifecycle change; a daemon that authenticates the
	// request ignores defaultActor: the bearer token decides.
	Transition(ctx context.Context, typ, id string, t wire.Transition, defaultActor string) (wire.TransitionResult, error)
	// Heartbeat records a heartbeat with an optional progress note.
	Heartbeat(ctx context.Context, typ, id, progress string) error
	// List reads the entities f selects, unsorted, with what o asks for.
	List(ctx context.Context, f wire.EntityFilter, o ListOptions) (wire.EntityList, error)
	// Queue reads the attention queue q selects.
	Queue(ctx context.Context, q attention.Query) (attention.Queue, error)
	// Judged says who judged what a database shows, and when; nil via a daemon.
	Judged(ctx context.Context, disconnectedAfter time.Duration, now time.Time) (*Judged, error)
	// Dismiss snoozes (d.Until set) or dismisses an item now in the queue.
	Dismiss(ctx context.Context, d attention.Dismissing, now time.Time, failureWindow time.Duration) error
	// DismissAll snoozes or dismisses every item b names, or cluster's: all or
	// none. It returns the fingerprints written.
	DismissAll(ctx context.Context, b attention.Bulk, cluster string, now time.Time, failureWindow time.Duration) ([]string, error)
	// Settle brings an ended entity's observed state up to date, as the next
	// sweep would (best effort).
	Settle(ctx context.Context, typ, id string)
	Close() error
}

// ListOptions say what each listed entity carries besides its state.
type ListOptions struct {
	// History: its whole audit rows (`status --json`).
	History bool
	// Process: an open entity's process facts, read from /proc by whoever reads the list (ADR-0048).
	Process bool
}

// Local reads and writes this host's store through the write path.
type Local struct {
	st   store.Backend
	w    *transitions.Writer
	host *probe.Host
	// db is where st was opened (""): a daemon holding its lock serves it.
	db string
	// runbook is the base of the queue items' runbook links.
	runbook string
	// me is who the command's writes are made as.
	me transitions.Principal
	// requireHB are the types expected to heartbeat from their start.
	requireHB []string
}

func (l *Local) beats() *wire.Heartbeats {
	hb := Heartbeats(l.host)
	hb.Required = func(typ string) bool { return slices.Contains(l.requireHB, typ) }
	return hb
}

// NewLocal writes into st, identifying this host's processes through host.
func NewLocal(st store.Backend, host *probe.Host) *Local {
	w := &transitions.Writer{Store: st, Now: time.Now, Ident: host, Contracts: reaper.Contracts{Host: host}, PIDs: reaper.PIDGuard{Host: host}}
	return &Local{st: st, w: w, host: host, me: Me()}
}

// Me is the principal of a command on this host: its own uid (the CLI on
// the store is a door too, docs/security.md).
func Me() transitions.Principal { return transitions.PeerPrincipal(os.Getuid(), "") }

// Entity implements Target, without the audit rows.
func (l *Local) Entity(ctx context.Context, typ, id string) (wire.Entity, error) {
	e, err := l.st.Get(ctx, typ, id)
	if err != nil {
		return wire.Entity{}, err
	}
	out := wire.FromEntity(e, nil, l.beats(), time.Now())
	if names, err := l.hostNames(ctx); err == nil {
		out.HostName = names[out.HostID]
	}
	return out, nil
}

// Register implements Target; the write path completes the pid's identity.
func (l *Local) Register(ctx context.Context, r wire.Register, actor string) (wire.Entity, bool, error) {
	reg, err := r.Registration(actor)
	if err != nil {
		return wire.Entity{}, false, err
	}
	reg.Principal = l.me
	created, err := l.w.Register(ctx, reg)
	if err != nil {
		return wire.Entity{}, false, err
	}
	typ, _ := transitions.CanonicalType(reg.Entity.Type)
	e, err := l.Entity(ctx, typ, reg.Entity.ID)
	return e, created, err
}

// Transition implements Target, answering as the API does.
func (l *Local) Transition(ctx context.Context, typ, id string, t wire.Transition, defaultActor string) (wire.TransitionResult, error) {
	actor, err := transitions.ActorFor(t.Actor, defaultActor, l.me, l.me.AnyUID())
	if err != nil {
		return wire.TransitionResult{}, err
	}
	req, err := t.Request(typ, id, actor)
	if err != nil {
		return wire.TransitionResult{}, err
	}
	req.Principal = l.me
	res, err := l.w.Transition(ctx, req)
	if err != nil {
		return wire.TransitionResult{}, err
	}
	return wire.TransitionResult{Entity: wire.FromEntity(res.After, nil, l.beats(), time.Now()), From: res.Before.LifecycleOr("")}, nil
}

// Heartbeats is how a reader on host shows the heartbeat an entity is
// judged by: host's entities' files read here, others' posted heartbeats.
func Heartbeats(host *probe.Host) *wire.Heartbeats {
	return &wire.Heartbeats{HostID: host.HostID(), Last: reaper.LastHeartbeat}
}

// Processes is how a reader on host reads an open entity's process facts.
// One reader per host for the command's life, so `status --wide --watch`
// shows the CPU used between frames, not a lifetime average.
func Processes(host *probe.Host) *wire.Processes {
	f, _ := factsByHost.LoadOrStore(host, probe.NewFacts(host))
	return &wire.Processes{HostID: host.HostID(), Read: reaper.ReadFacts(f.(*probe.Facts), nil), Leftovers: reaper.ReadLeftovers(f.(*probe.Facts))}
}

// factsByHost keeps each host's *probe.Facts across --watch frames.
var factsByHost sync.Map

// Heartbeat implements Target.
func (l *Local) Heartbeat(ctx context.Context, typ, id, progress string) error {
	if !l.me.AnyUID() {
		e, err := l.st.Get(ctx, typ, id)
		if err != nil {
			return err
		}
		if !l.me.MayActOn(&e) {
			return fmt.Errorf("%w: %s/%s is not one %s may heartbeat (its processes are another user's)", transitions.ErrForbidden, typ, id, l.me.Name)
		}
	}
	return l.st.RecordHeartbeat(ctx, typ, id, time.Now(), progress)
}

// Settle implements Target with one probe under the default thresholds.
func (l *Local) Settle(ctx context.Context, typ, id string) {
	rp := reaper.NewOneShot(l.st, l.host, reaper.DefaultSettings, "")
	_, _ = rp.ProbeOne(ctx, typ, id, true)
}

// Close implements Target.
func (l *Local) Close() error { return l.st.Close() }

// Remote reads and writes through a daemon's API.
type Remote struct {
	c *client.Client
	// run, when set, is this host, whose process identity (exec's child) is
	// sent along: the daemon may run on another host.
	run *probe.Host
}

// NewRemote writes through c; run is this host when registering its own
// processes, else nil.
func NewRemote(c *client.Client, run *probe.Host) *Remote {
	return &Remote{c: c, run: run}
}

// Entity implements Target.
func (r *Remote) Entity(ctx context.Context, typ, id string) (wire.Entity, error) {
	return r.c.Entity(ctx, typ, id)
}

// Register implements Target; the daemon decides the actor.
func (r *Remote) Register(ctx context.Context, reg wire.Register, _ string) (wire.Entity, bool, error) {
	if h := r.run; h != nil {
		reg.HostID = h.HostID()
		reg.BootID, _ = h.BootID()
		if st, _, err := h.StartOf(reg.PID); err == nil {
			reg.PIDStartTime = unixtime.Of(st)
		}
		if st, _, err := h.StartOf(os.Getpid()); err == nil {
			reg.SupervisorStartTime = unixtime.Of(st)
		}
	}
	return r.c.Register(ctx, reg)
}

// Transition implements Target. With a token the daemon records its
// principal, so defaultActor goes only without one, as the daemon would take
// it (the admin right: root's on the socket); one it would refuse goes unsent.
func (r *Remote) Transition(ctx context.Context, typ, id string, t wire.Transition, defaultActor string) (wire.TransitionResult, error) {
	if t.Actor == "" && !r.c.HasToken() {
		t.Actor, _ = transitions.ActorFor("", defaultActor, transitions.Principal{}, !r.c.Unix() || os.Getuid() == 0)
	}
	return r.c.Transition(ctx, typ, id, t)
}

// Heartbeat implements Target.
func (r *Remote) Heartbeat(ctx context.Context, typ, id, progress string) error {
	return r.c.Heartbeat(ctx, typ, id, progress)
}

// Settle implements Target: nothing, the daemon sweeps on its own.
func (*Remote) Settle(context.Context, string, string) {}

// Close implements Target.
func (*Remote) Close() error { return nil }
