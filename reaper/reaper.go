// Package reaper is the jobs that act on what the probe observes: the sweep,
// terminal enforcement, phantom reaping and orchestration, schedule checks.
// Every lifecycle change goes through the one write path with actor `reaper`
// (docs/architecture.md).
package reaper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"watchdog/internal/unixtime"
	"watchdog/judge"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Store is the part of the store the reaper reads and writes directly
// (observations only; lifecycles go through the Writer).
type Store interface {
	List(ctx context.Context, f store.Filter) ([]store.Entity, error)
	Get(ctx context.Context, typ, id string) (store.Entity, error)
	RecordObservation(ctx context.Context, typ, id string, o store.Observation) (bool, error)
	// DaemonHosts is the store's record of which hosts had a daemon sweep
	// them at or after since (see dropHostsWithDaemons).
	DaemonHosts(ctx context.Context, since time.Time) (map[string]bool, error)
}

// Prober looks at one entity and re-checks one pid; *probe.Host implements it.
// ctx bounds the probe's artifact check.
type Prober interface {
	Probe(ctx context.Context, t probe.Subject, now time.Time) probe.Observations
	CheckPID(t probe.PIDSubject) probe.PIDObservation
	// Owner and Ancestors say whose a process is and where it hangs:
	// asked only before a signal (kill_orphans).
	Owner(pid int) (probe.ProcessOwner, error)
	Ancestors(pid int) []int
	// Process reads one process's facts (a leftover's evidence), an
	// error when it is gone or its pid names another start.
	Process(pid int, startTicks uint64) (probe.Process, error)
}

// Trees keeps watched roots' descendants: the daemon's proctree.Tree, in
// either of its modes.
type Trees interface {
	Descendants(root proctree.Root) ([]proctree.Proc, error)
	Mode() proctree.Mode
	Refresh() error
}

// Observer hears what the jobs did (metrics); nil is fine.
type Observer interface {
	Reaped(entityType, reasonCode string)
	SweepFinished(t time.Time)
}

// Settings are the thresholds and limits the jobs apply: the judgement's
// (config `thresholds.*`) and the jobs' own (`reaper.*`).
type Settings struct {
	judge.Settings
	// HostDisconnectedAfter and HostLostAfter are how long a host's daemon may be silent (JudgeHosts).
	HostDisconnectedAfter time.Duration
	HostLostAfter         time.Duration
	// SweepBudget bounds one sweep; a sweep that runs out says so.
	SweepBudget time.Duration
	DryRun      bool
	MaxPerRun   int
	KillOrphans bool
	KillGrace   time.Duration
	// KillUIDs are the users whose orphans may be signalled; nil means
	// every user but root (reaper.kill_users).
	KillUIDs []int
	// KillLeftovers signals an entity's leftover processes once the
	// finding is LeftoverGrace old (reaper.kill_leftovers, leftover_grace).
	KillLeftovers bool
	LeftoverGrace time.Duration
}

// DefaultSettings are the config's defaults (docs/reference/config.md).
var DefaultSettings = Settings{
	Settings:              judge.DefaultSettings,
	HostDisconnectedAfter: time.Minute,
	HostLostAfter:         15 * time.Minute,
	SweepBudget:           10 * time.Second,
	MaxPerRun:             500,
	KillGrace:             10 * time.Second,
	LeftoverGrace:         30 * time.Second,
}

// Reaper runs the jobs. Settings may be swapped between runs (SIGHUP): the
// daemon stops its scheduler and holds back the monitor's steps to do it.
type Reaper struct {
	Store  Store
	Writer *transitions.Writer
	Prober Prober
	HostID string
	// Leads says whether this daemon leads a fleet; nil means it always leads.
	Leads    func() bool
	Settings Settings
	Log      *zap.Logger
	Observer Observer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Signal sends a signal to a process (kill_orphans); nil means
	// unix.Kill. Injected so tests can watch without killing.
	Signal func(pid int, sig int) error
	// Trees holds kept process trees; nil, or a root not kept, means a /proc walk (ADR-0044).
	Trees Trees
	// Watched says the daemon holds e's pidfd and no exit came: /proc is not read.
	Watched func(e *store.Entity) bool
	// WatchedFile is e's heartbeat file's mtime (zero: no such file) when the
	// daemon's inotify watch vouches for it, so the probe does not stat it
	// (monitor.Monitor.HeartbeatFileAt); ok false: the probe looks.
	WatchedFile func(e *store.Entity) (mtime time.Time, ok bool)
	// Hostname names this daemon's host in the audit rows of its writes; "" uses HostID.
	Hostname string
	// After runs fn after d: the deadlines of a leftover's SIGTERM and
	// SIGKILL; nil means time.AfterFunc.
	After func(d time.Duration, fn func())

	// leftovers are the leftover processes being ended (kill.go), and
	// kill what their deadlines read of the settings.
	leftovers leftoverKills
	kill      atomic.Pointer[killSettings]
	// resume is where the last sweep ran out of budget, so every entity gets its turn.
	resume sweepCursor
	// kept is nil while a sweep holds it (keptEntities).
	kept      *keptEntities
	lastSweep time.Time
	keptMu    sync.Mutex
	// sweepPage is how many entities a sweep reads at a time; 0 means
	// DefaultSweepPage (tests set it small to cross pages).
	sweepPage int
	// steps is held by each per-entity step and (write) by SetSettings, so a
	// reload never swaps the settings under a step.
	steps sync.RWMutex
	// probes and written count what judging costs (Counts).
	probes, written atomic.Uint64
}

// Counts are the probes made (a look at an entity's process and files)
// and the observations written since the reaper was made.
func (r *Reaper) Counts() (probes, written uint64) { return r.probes.Load(), r.written.Load() }

// sweepCursor is the key of the last entity an unfinished sweep reached.
type sweepCursor struct {
	mu    sync.Mutex
	key   store.Key
	valid bool
}

// now is the clock at the store's precision, so an observation kept in
// memory reads the same as the row it wrote.
func (r *Reaper) now() time.Time {
	if r.Now != nil {
		return r.Now().Truncate(unixtime.Precision)
	}
	return time.Now().Truncate(unixtime.Precision)
}

func (r *Reaper) log() *zap.Logger {
	if r.Log != nil {
		return r.Log
	}
	return zap.NewNop()
}

// Action is one lifecycle change a job decided on, applied or (dry run)
// only reported.
type Action struct {
	Type   string
	ID     string
	From   string
	To     string
	Reason state.ReasonCode
	Detail string
	// Applied is false in a dry run, and when the write lost a race.
	Applied bool
	// Skipped explains why a decided action was not applied.
	Skipped string
}

func (a Action) String() string {
	s := fmt.Sprintf("%s/%s: %s -> %s (%s)", a.Type, a.ID, a.From, a.To, a.Reason)
	if a.Detail != "" {
		s += ": " + a.Detail
	}
	if a.Skipped != "" {
		s += " [skipped: " + a.Skipped + "]"
	}
	return s
}

// Report is what one job run did.
type Report struct {
	Job     string
	Checked int
	Written int
	Actions []Action
	// Truncated says max_per_run stopped the run before every candidate
	// was handled; the next run continues.
	Truncated bool
	DryRun    bool
}

// principal is who the reaper's writes are audited as: the reaper of
// this host.
func (r *Reaper) principal() transitions.Principal {
	host := r.Hostname
	if host == "" {
		host = r.HostID
	}
	return transitions.Principal{Name: "reaper@" + host}
}

// apply sends one decided action through the write path. A conflict means
// the owner wrote first: its state wins, and that is not an error.
func (r *Reaper) apply(ctx context.Context, a *Action, reason state.StateReason, trigger string) error {
	if r.Settings.DryRun {
		a.Skipped = "dry run"
		return nil
	}
	_, err := r.Writer.Transition(ctx, transitions.Request{
		Type: a.Type, ID: a.ID, To: a.To, ExpectFrom: a.From,
		Reason: &reason, Actor: transitions.ActorReaper, Trigger: trigger,
		Principal: r.principal(),
	})
	switch {
	case err == nil:
		a.Applied = true
		if r.Observer != nil {
			r.Observer.Reaped(a.Type, string(a.Reason))
		}
		r.log().Info("transition", zap.String("entity", a.Type+"/"+a.ID), zap.String("from", a.From),
			zap.String("to", a.To), zap.String("reason", string(a.Reason)), zap.String("detail", a.Detail))
		return nil
	case errors.Is(err, transitions.ErrConflict), errors.Is(err, transitions.ErrInvalidTransition), errors.Is(err, transitions.ErrNotFound):
		// Someone else moved it first (typically the owner recording its
		// own end inside the grace): theirs stands.
		a.Skipped = "lost the race: " + err.Error()
		r.log().Debug("transition lost", zap.String("entity", a.Type+"/"+a.ID), zap.Error(err))
		return nil
	}
	return fmt.Errorf("reap %s/%s: %w", a.Type, a.ID, err)
}

// Outcomes lists, per entity type, every reason code a reaper job can record,
// so watchdog_reaped_total can start at 0 for each.
func Outcomes() map[string][]state.ReasonCode {
	out := map[string][]state.ReasonCode{}
	for _, t := range transitions.Types() {
		g, _ := transitions.Lookup(t)
		if g.DeadProcessTerminal != "" {
			out[t] = append(out[t], state.SystemHealthProcessDeadNoTerminal)
		}
		switch {
		case g.Reconcile != nil:
			out[t] = append(out[t], g.Reconcile.Codes...)
		case g.DeadProcessTerminal != "":
			out[t] = append(out[t], state.SystemReaperPhantomProcessDead, state.SystemReaperPhantomOrphaned)
		}
	}
	return out
}

func errField(err error) zap.Field { return zap.Error(err) }

func (r *Reaper) maxPerRun() int {
	if r.Settings.MaxPerRun > 0 {
		return r.Settings.MaxPerRun
	}
	return DefaultSettings.MaxPerRun
}

// openOnHost lists the open entities this daemon acts on: its host's,
// and the host-less ones while it leads.
func (r *Reaper) openOnHost(ctx context.Context) ([]store.Entity, error) {
	return r.Store.List(ctx, store.Filter{HostID: r.HostID, OpenOnly: true, AlsoHostless: r.leads()})
}

// leads says whether this daemon does the fleet's host-less work now
// (see Leads).
func (r *Reaper) leads() bool { return r.Leads == nil || r.Leads() }

// owns says whether e is this daemon's to judge and act on: no daemon ever
// ends another host's.
func (r *Reaper) owns(e store.Entity) bool {
	return e.HostID == r.HostID || (e.HostID == "" && r.leads())
}

// parentCache answers "is this entity's parent finished?" once per parent
// per sweep.
type parentCache struct {
	store Store
	ctx   context.Context
	seen  map[store.Key]bool
}

func newParentCache(ctx context.Context, st Store) parentCache {
	return parentCache{store: st, ctx: ctx, seen: map[store.Key]bool{}}
}

// terminal says whether e's parent is finished (see finished): the probe's
// "parent entity ended" and the team's orphaned rule both mean this.
func (p parentCache) terminal(e store.Entity) bool {
	if e.ParentID == "" {
		return false
	}
	key := store.Key{Type: e.ParentType, ID: e.ParentID}
	if v, ok := p.seen[key]; ok {
		return v
	}
	parent, err := p.store.Get(p.ctx, e.ParentType, e.ParentID)
	ended := err == nil && judge.Finished(&parent)
	p.seen[key] = ended
	return ended
}
