// Package target is where a CLI command's reads and writes go: this
// host's store (Local) or a daemon's API (Remote), behind one interface
// that answers in the API's own wire shapes either way.
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

// Target is what register, transition, heartbeat and exec write through,
// and what status, attention, snooze and dismiss read and triage.
//
// The house rule puts a small interface beside its consumer; this one sits
// beside its two implementations instead, because it has two consumers
// (cmd/watchdog and runner) and its whole point is that Local and Remote
// answer the same questions in the same shapes. runner declares the subset
// it uses (runner.Sink); cmd/watchdog uses all of it.
type Target interface {
	// Entity reads one entity; a missing one is transitions.ErrNotFound.
	Entity(ctx context.Context, typ, id string) (wire.Entity, error)
	// Register registers (or updates) an entity and reports whether it
	// was created. actor records a local registration; a daemon records
	// the principal of its own request.
	Register(ctx context.Context, r wire.Register, actor string) (wire.Entity, bool, error)
	// Transition asks for a lifecycle change. t.Actor is an explicit
	// claim; without one, defaultActor is used, except by a daemon that
	// authenticates the request: there the bearer token decides.
	Transition(ctx context.Context, typ, id string, t wire.Transition, defaultActor string) (wire.TransitionResult, error)
	// Heartbeat records a heartbeat with an optional progress note.
	Heartbeat(ctx context.Context, typ, id, progress string) error
	// List reads the entities f selects, unsorted, in the API's list
	// shape, each with what o asks for besides.
	List(ctx context.Context, f wire.EntityFilter, o ListOptions) (wire.EntityList, error)
	// Queue reads the attention queue q selects. A database's is built
	// under q.FailureWindow; a daemon applies its own.
	Queue(ctx context.Context, q attention.Query) (attention.Queue, error)
	// Judged says who judged what a database shows, and when; nil through
	// a daemon, which is the judge. disconnectedAfter is the silence after
	// which a daemon that cannot be seen holding the database's lock
	// counts as gone.
	Judged(ctx context.Context, disconnectedAfter time.Duration, now time.Time) (*Judged, error)
	// Dismiss snoozes (d.Until set) or dismisses the attention item
	// d.Fingerprint names, which must be in the queue: a database's under
	// failureWindow at now, a daemon's under its own.
	Dismiss(ctx context.Context, d attention.Dismissing, now time.Time, failureWindow time.Duration) error
	// DismissAll snoozes (b.Until set) or dismisses every item
	// b.Fingerprints names or, with cluster set instead (a cluster_id or
	// its reason code), every item of that cluster the queue shows now and
	// no dismissal hides: all or none (attention.DismissAll). It returns
	// the fingerprints written.
	DismissAll(ctx context.Context, b attention.Bulk, cluster string, now time.Time, failureWindow time.Duration) ([]string, error)
	// Settle brings an ended entity's observed state (health, delivery)
	// up to date, as the daemon's next sweep would, so a status read right
	// after shows the whole state even with no daemon running. Best
	// effort: what it cannot do the sweep will.
	Settle(ctx context.Context, typ, id string)
	Close() error
}

// ListOptions say what each listed entity carries besides its state.
type ListOptions struct {
	// History: its whole audit rows (`status --json`).
	History bool
	// Process: an open entity's process facts (`status --wide`, ADR-0048),
	// read from /proc by whoever reads the list: here, for a database,
	// for this host's entities; the daemon, through its API, for its own.
	Process bool
}

// Local reads and writes this host's store through the write path.
type Local struct {
	st   store.Backend
	w    *transitions.Writer
	host *probe.Host
	// db is where st was opened ("" when not known): whether a daemon
	// holds its lock says whether one serves it (Judged).
	db string
	// runbook is the base of the queue items' runbook links (Choice's
	// RunbookURL).
	runbook string
	// me is who the command's writes are made as.
	me transitions.Principal
	// requireHB are the types expected to heartbeat from their start
	// (Choice's RequireHeartbeat).
	requireHB []string
}

// beats is Heartbeats on l's host, with the types required to heartbeat.
func (l *Local) beats() *wire.Heartbeats {
	hb := Heartbeats(l.host)
	hb.Required = func(typ string) bool { return slices.Contains(l.requireHB, typ) }
	return hb
}

// NewLocal writes into st, identifying this host's processes through
// host. Close closes st.
func NewLocal(st store.Backend, host *probe.Host) *Local {
	w := &transitions.Writer{Store: st, Now: time.Now, Ident: host, Contracts: reaper.Contracts{Host: host}, PIDs: reaper.PIDGuard{Host: host}}
	return &Local{st: st, w: w, host: host, me: Me()}
}

// Me is the principal of a command on this host: its own uid, as the
// kernel gave it to this process (the CLI on the store is a door too,
// docs/security.md).
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

// Register implements Target; the write path completes a local pid's
// identity, start ticks included.
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
	if !l.me.AnyUID() && defaultActor == transitions.ActorAdmin && t.Actor == "" {
		defaultActor = transitions.ActorOrchestrator // admin is root's, as on the socket
	}
	if !l.me.AnyUID() && t.Actor == transitions.ActorAdmin {
		return wire.TransitionResult{}, fmt.Errorf("%w: actor admin is root's on this host; %s asks as orchestrator", transitions.ErrForbidden, l.me.Name)
	}
	req, err := t.Request(typ, id, defaultActor)
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
// judged by: its heartbeat file read here, for host's entities, by the
// probe's rule (probe.LastHeartbeat); another host's posted heartbeat.
func Heartbeats(host *probe.Host) *wire.Heartbeats {
	return &wire.Heartbeats{HostID: host.HostID(), Last: reaper.LastHeartbeat}
}

// Processes is how a reader on host reads an open entity's process
// facts: its process and tree read here, for host's entities
// (reaper.ReadFacts, the tree seeded from the root). One reader per host
// for the command's life, so that `status --wide --watch` shows the CPU
// used between two frames, not a lifetime average.
func Processes(host *probe.Host) *wire.Processes {
	f, _ := factsByHost.LoadOrStore(host, probe.NewFacts(host))
	return &wire.Processes{HostID: host.HostID(), Read: reaper.ReadFacts(f.(*probe.Facts), nil), Leftovers: reaper.ReadLeftovers(f.(*probe.Facts))}
}

// factsByHost keeps each host's facts reader (*probe.Facts) for the
// command's life: a --watch opens the target again for every frame.
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

// Settle implements Target with one probe of the entity under the default
// thresholds (reaper.DefaultSettings, which are config.Default's: a test in
// daemon holds them together).
func (l *Local) Settle(ctx context.Context, typ, id string) {
	rp := reaper.NewOneShot(l.st, l.host, reaper.DefaultSettings, "")
	_, _ = rp.ProbeOne(ctx, typ, id, true)
}

// Close implements Target.
func (l *Local) Close() error { return l.st.Close() }

// Remote reads and writes through a daemon's API.
type Remote struct {
	c *client.Client
	// run, when set, is this host, and the registered pid a process of it
	// (exec's child): the daemon may run on another host, so this host's
	// identity of the process is sent with it. Without it a document goes
	// as written and the daemon completes the identity under its own host
	// id, which a plain `watchdog register` cannot know.
	run *probe.Host
}

// NewRemote writes through c. run is this host when the registrations
// describe its own processes (see Remote), else nil.
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

// Transition implements Target. With a token the daemon records the
// token's principal, so defaultActor is sent only without one (docs/reference/http-api.md, Transition);
// over the local socket admin is root's only, so another user's command
// sends none (orchestrator).
func (r *Remote) Transition(ctx context.Context, typ, id string, t wire.Transition, defaultActor string) (wire.TransitionResult, error) {
	if t.Actor == "" && !r.c.HasToken() && (!r.c.Unix() || os.Getuid() == 0 || defaultActor != transitions.ActorAdmin) {
		t.Actor = defaultActor
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
