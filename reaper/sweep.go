package reaper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.uber.org/zap"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
)

// ErrSweepOverBudget says a sweep ran out of time before probing every
// entity: what it did not reach is not known to be fine.
var ErrSweepOverBudget = errors.New("sweep over budget")

// Sweep probes every entity of this host that is open or ended within
// failure_window, and records what changed. A second pass does the artifact
// contracts, so no file system can delay a death.
func (r *Reaper) Sweep(ctx context.Context) (Report, error) {
	start := r.now()
	rep := Report{Job: JobSweep}
	budget := r.Settings.SweepBudget
	if budget <= 0 {
		budget = DefaultSettings.SweepBudget
	}
	// The budget bounds real work, so it runs on the monotonic clock; the
	// injected clock (r.now) judges ages and may be a test's fake.
	deadline := time.Now().Add(budget)

	// Other hosts' live entities and host-less ones are the leader's to
	// judge (one verdict per entity in a fleet); a lone daemon leads.
	leads := r.leads()
	f := store.Filter{HostID: r.HostID, AlsoRemoteLive: leads, AlsoHostless: leads, OpenOnly: true, EndedSince: start.Add(-r.window())}
	if r.Trees != nil && r.Trees.Mode() == proctree.ModeWalk {
		// The reduced mode's sets follow the processes by walks: one per
		// sweep (and one per death, the monitor's), ADR-0043.
		if err := r.Trees.Refresh(); err != nil {
			r.log().Warn("cannot walk /proc for the process trees", errField(err))
		}
	}
	parents := newParentCache(ctx, r.Store)
	// A page at a time, resuming where the last sweep stopped (ADR-0052).
	pages := r.sweepPages(f)
	kept := r.keep()
	if kept != nil {
		defer r.handBack(kept)
		pages.kept = kept
	}
	var hosts daemonHosts
	overBudget := func(done int, last store.Key) error {
		r.resume.set(last)
		err := fmt.Errorf("%w: probed %d entities in %s; the next sweep starts where this one stopped", ErrSweepOverBudget, done, budget)
		r.log().Error("sweep incomplete", zap.Error(err))
		return err
	}

	// Pass 1: liveness. Artifact work is set aside, in sweep order, by key
	// (read again when its turn comes).
	var deferred []store.Key
	var last store.Key
	n := 0
	for {
		page, err := pages.next(ctx)
		if err != nil {
			return rep, fmt.Errorf("sweep: %w", err)
		}
		if len(page) == 0 {
			break
		}
		page = r.dropHostsWithDaemons(ctx, page, &hosts)
		for i := range page {
			e := page[i]
			// Checked every 64 entities and never before the first 64, so
			// even a sweep whose store read ate the budget makes progress.
			if n > 0 && n%64 == 0 && time.Now().After(deadline) {
				return rep, overBudget(rep.Checked, last)
			}
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("sweep interrupted after %d entities: %w", rep.Checked, err)
			}
			n++
			last = store.KeyOf(&e)
			if judge.ByCron(&e) {
				continue // check_schedules judges schedules
			}
			if r.artifactsDue(e) {
				deferred = append(deferred, last)
				continue
			}
			if err := r.sweepOne(ctx, &rep, e, parents); err != nil {
				return rep, err
			}
		}
	}

	// Pass 2: the first contract always gets its turn, so a host whose liveness
	// pass eats the budget still makes progress.
	if len(deferred) > 0 {
		budgetCtx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		for i, k := range deferred {
			actx := budgetCtx
			if i == 0 {
				actx = ctx
			} else if time.Now().After(deadline) {
				return rep, overBudget(rep.Checked, deferred[i-1])
			}
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("sweep interrupted after %d entities: %w", rep.Checked, err)
			}
			e, err := r.Store.Get(ctx, k.Type, k.ID)
			if errors.Is(err, store.ErrNotFound) {
				continue // gone since its page was read
			}
			if err != nil {
				return rep, fmt.Errorf("sweep: %w", err)
			}
			rep.Checked++
			s, err := r.checkEntity(actx, e, parents, judge.Event{})
			if err != nil {
				return rep, fmt.Errorf("sweep: %w", err)
			}
			if s.interrupted {
				rep.Checked--
				if err := ctx.Err(); err != nil {
					return rep, fmt.Errorf("sweep interrupted after %d entities: %w", rep.Checked, err)
				}
				if i == 0 {
					continue // cannot happen without ctx done; nothing recorded
				}
				return rep, overBudget(rep.Checked, deferred[i-1])
			}
			if s.written {
				rep.Written++
			}
		}
	}
	r.resume.clear()
	if kept != nil {
		kept.sweepDone()
	}
	if r.Observer != nil {
		r.Observer.SweepFinished(r.now())
	}
	return rep, nil
}

// sweepOne probes and records one entity of the liveness pass.
func (r *Reaper) sweepOne(ctx context.Context, rep *Report, e store.Entity, parents parentCache) error {
	rep.Checked++
	s, err := r.checkEntity(ctx, e, parents, judge.Event{})
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if s.written {
		rep.Written++
	}
	return nil
}

// Observe is the sweep's step for one entity (see, judge, record when
// changed), after what happened: a death the kernel reported (ev) is not
// looked for again, and its exit status goes in the same observation;
// a zero ev is a plain look. written is false when nothing changed or a
// transition landed since e was read.
func (r *Reaper) Observe(ctx context.Context, e store.Entity, ev judge.Event) (written bool, err error) {
	r.steps.RLock()
	defer r.steps.RUnlock()
	return r.observe(ctx, e, ev)
}

func (r *Reaper) observe(ctx context.Context, e store.Entity, ev judge.Event) (written bool, err error) {
	if judge.ByCron(&e) {
		return r.checkScheduleEntity(ctx, e)
	}
	if e.HostID == "" && !r.leads() {
		return false, nil // host-less: the leader judges it
	}
	s, err := r.checkEntity(ctx, e, newParentCache(ctx, r.Store), ev)
	switch {
	case err != nil:
		return false, fmt.Errorf("check %s/%s: %w", e.Type, e.ID, err)
	case s.interrupted:
		return false, fmt.Errorf("check %s/%s: artifact check interrupted: %w", e.Type, e.ID, context.Cause(ctx))
	}
	return s.written, nil
}

// checkEntity is the one step both of the sweep's passes and Observe
// take for an entity.
func (r *Reaper) checkEntity(ctx context.Context, e store.Entity, parents parentCache, ev judge.Event) (step, error) {
	s, err := r.judgeOne(ctx, e, parents.terminal(e), true, ev)
	if err == nil && !s.interrupted && r.Settings.KillLeftovers && !r.Settings.DryRun && e.HostID == r.HostID {
		r.killLeftovers(e, s.v.Observation.Reasons)
	}
	return s, err
}

// artifactsDue says whether probing e checks its artifact contract (see
// judge.Subject and remoteSubject): the file system work a sweep does last.
func (r *Reaper) artifactsDue(e store.Entity) bool {
	return e.Terminal && len(e.Artifacts) > 0 && e.HostID == r.HostID && judge.Probed(&e)
}

// DefaultSweepPage is how many entities a sweep reads from the store at a time (ADR-0052).
const DefaultSweepPage = 1000

// sweepPager reads from past the resume cursor to the end, then from the
// start: every entity once.
type sweepPager struct {
	st    Store
	f     store.Filter
	limit int
	// until is the cursor the walk wraps round to; wrapped says the walk
	// is past the end; done that it is over.
	until            store.Key
	resumed, wrapped bool
	done             bool
	// kept re-decodes a page only where rows changed.
	kept *keptEntities
	hits []*store.Entity
}

// sweepPages walks f from past the sweep's resume cursor round to it.
func (r *Reaper) sweepPages(f store.Filter) *sweepPager {
	until, resumed := r.resume.get()
	return r.pagesFrom(f, until, resumed)
}

// pages walks f from the start to the end, a page at a time: a job that
// reads every open entity of the host holds a page, not the host.
func (r *Reaper) pages(f store.Filter) *sweepPager { return r.pagesFrom(f, store.Key{}, false) }

func (r *Reaper) pagesFrom(f store.Filter, until store.Key, resumed bool) *sweepPager {
	p := &sweepPager{st: r.Store, f: f, limit: r.sweepPage, until: until, resumed: resumed}
	if p.limit <= 0 {
		p.limit = DefaultSweepPage
	}
	p.f.Limit = p.limit
	p.f.After = until // the zero key, from the start, without a cursor
	return p
}

// next reads the next page; an empty one says the walk is over.
func (p *sweepPager) next(ctx context.Context) ([]store.Entity, error) {
	for !p.done {
		page, n, last, err := p.read(ctx)
		if err != nil {
			return nil, err
		}
		if p.wrapped && p.until.Less(last) {
			// Round to the cursor: what is past it was read first.
			if i := slices.IndexFunc(page, func(e store.Entity) bool { return p.until.Less(store.KeyOf(&e)) }); i >= 0 {
				page = page[:i]
			}
			p.done = true
		}
		switch {
		case n == p.limit && !p.done:
			p.f.After = last
		case p.resumed && !p.wrapped:
			// The end, after a resumed start: round from the start.
			p.wrapped, p.f.After = true, store.Key{}
		default:
			p.done = true
		}
		if len(page) > 0 {
			return page, nil
		}
	}
	return nil, nil
}

// read reads the page after p.f.After; a row gone between a page's two
// reads does not end the walk early.
func (p *sweepPager) read(ctx context.Context) (page []store.Entity, n int, last store.Key, err error) {
	if p.kept == nil {
		return p.whole(ctx)
	}
	f := p.f
	f.RevisionsOnly = true
	revs, err := p.st.List(ctx, f)
	if err != nil || len(revs) == 0 {
		return nil, 0, last, err
	}
	last = store.KeyOf(&revs[len(revs)-1])
	hits, changed := p.hits[:0], 0
	for i := range revs {
		e := p.kept.get(&revs[i])
		if e == nil {
			changed++
		}
		hits = append(hits, e)
	}
	p.hits = hits
	if changed > len(revs)/8 {
		// Many rows new or written since (a first sweep, a burst): one
		// read of the page beats a point read each.
		page, n, last, err = p.whole(ctx)
		p.kept.put(page)
		return page, n, last, err
	}
	page = revs[:0] // written behind the reads: entry i is read before it is overwritten
	for i, e := range hits {
		if e != nil {
			page = append(page, *e)
			continue
		}
		e, err := p.st.Get(ctx, revs[i].Type, revs[i].ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // gone since its page was read
		}
		if err != nil {
			return nil, 0, last, err
		}
		p.kept.put([]store.Entity{e})
		page = append(page, e)
	}
	return page, len(revs), last, nil
}

// whole reads the page in full.
func (p *sweepPager) whole(ctx context.Context) (page []store.Entity, n int, last store.Key, err error) {
	page, err = p.st.List(ctx, p.f)
	if len(page) > 0 {
		last = store.KeyOf(&page[len(page)-1])
	}
	return page, len(page), last, err
}

// keptEntities are decoded entities by key at their revision, kept only
// while sweeps come within keepWithin of each other (ADR-0052).
type keptEntities struct {
	m   map[store.Key]*keptEntity
	gen uint32
}

type keptEntity struct {
	e   store.Entity
	gen uint32
}

const (
	keepWithin = 10 * time.Second
	keepMax    = 10 * DefaultSweepPage
)

// get is the kept entity at rev's revision, or nil; revision 0 never matches.
func (k *keptEntities) get(rev *store.Entity) *store.Entity {
	if c, ok := k.m[store.KeyOf(rev)]; ok && rev.Revision != 0 && c.e.Revision == rev.Revision {
		c.gen = k.gen
		return &c.e
	}
	return nil
}

// put keeps the entities as read, while there is room.
func (k *keptEntities) put(list []store.Entity) {
	for i := range list {
		key := store.KeyOf(&list[i])
		if c, ok := k.m[key]; ok {
			c.e, c.gen = list[i], k.gen
		} else if len(k.m) < keepMax && list[i].Revision != 0 {
			k.m[key] = &keptEntity{e: list[i], gen: k.gen}
		}
	}
}

// sweepDone drops what the sweep that just ended over every entity did
// not meet: ended past the window, gone, or moved off this host.
func (k *keptEntities) sweepDone() {
	for key, c := range k.m {
		if c.gen != k.gen {
			delete(k.m, key)
		}
	}
}

// keep takes the kept entities for a sweep starting now, or nil when the
// last sweep started more than keepWithin ago.
func (r *Reaper) keep() *keptEntities {
	now := time.Now()
	r.keptMu.Lock()
	defer r.keptMu.Unlock()
	k, last := r.kept, r.lastSweep
	r.kept, r.lastSweep = nil, now
	if last.IsZero() || now.Sub(last) > keepWithin {
		return nil
	}
	if k == nil {
		k = &keptEntities{m: map[store.Key]*keptEntity{}}
	}
	k.gen++
	return k
}

// handBack keeps k for the next sweep.
func (r *Reaper) handBack(k *keptEntities) {
	r.keptMu.Lock()
	r.kept = k
	r.keptMu.Unlock()
}

// get is the cursor, or the zero key and false without one.
func (c *sweepCursor) get() (store.Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid {
		return store.Key{}, false
	}
	return c.key, true
}

func (c *sweepCursor) set(k store.Key) {
	c.mu.Lock()
	c.key, c.valid = k, true
	c.mu.Unlock()
}

func (c *sweepCursor) clear() {
	c.mu.Lock()
	c.valid = false
	c.mu.Unlock()
}

func (r *Reaper) window() time.Duration { return r.Settings.Window() }

// step is one entity's turn: what was seen, what Judge made of it, and
// whether the observation was new and stored.
type step struct {
	seen judge.Seen
	v    judge.Verdict
	// written is false when unchanged or a transition landed since the read.
	written bool
	// interrupted: ctx stopped the artifact check; nothing was recorded.
	interrupted bool
}

// see probes e now as its rules name; an entity of another host is seen
// only by what can be judged from here.
func (r *Reaper) see(ctx context.Context, e store.Entity, parentTerminal bool, now time.Time, ev judge.Event) judge.Seen {
	if !judge.Probed(&e) || r.Prober == nil {
		// Nothing of its own to probe, or a reaper with no prober (a test
		// of the cron alone): judged on its row.
		return judge.Seen{Event: ev}
	}
	t := judge.Subject(&e, parentTerminal)
	t.HeartbeatRequired = r.Settings.Thresholds.Requires(e.Type)
	t.Gone = !e.DeadSince.IsZero() || e.Terminal // the commonest answer then costs one syscall
	if e.HostID != r.HostID {
		t = remoteSubject(t)
	} else if ev.Died {
		// The kernel told of the death: final, not looked for again.
		t.Died = true
		if t.Exit == nil {
			t.Exit = ev.Exit
		}
	} else if r.Watched != nil && !e.Terminal && e.DeadSince.IsZero() && e.Health != state.HealthOrphaned && r.Watched(&e) {
		t.Watched = true // the events tell a death: no /proc read
	}
	if r.WatchedFile != nil && t.HeartbeatFile != "" && !t.Terminal {
		t.HeartbeatFileAt, t.HeartbeatFileKnown = r.WatchedFile(&e) // read only if inotify told a change
	}
	seen := judge.Seen{Probed: true, Event: ev}
	r.probes.Add(1)
	if o, ok := probe.Unread(t, now); ok {
		seen.Observed = o // nothing left to read but the descendants
	} else {
		seen.Observed = r.Prober.Probe(ctx, t, now)
	}
	if hb := seen.Observed.Heartbeat; hb.Source == probe.HeartbeatFile {
		seen.HeartbeatFile = hb.At
	}
	if l := seen.Observed.PID.Liveness; e.HostID == r.HostID && judge.LeftoversDue(&e, l) {
		seen.Descendants = r.descendants(&e, l)
	}
	return seen
}

// descendants are e's live descendants by pid: from its kept tree, else a
// /proc walk, plus the stored finding's still-same processes (a dead root's
// reparented children are found by no walk).
func (r *Reaper) descendants(e *store.Entity, root probe.Liveness) []probe.Process {
	want := map[int]uint64{}
	rt := proctree.Root{PID: e.PID, StartTicks: e.PIDStartTicks}
	var procs []proctree.Proc
	var err error
	if r.Trees != nil {
		procs, err = r.Trees.Descendants(rt)
	}
	if (r.Trees == nil || err != nil) && root == probe.Alive {
		procs = walkDescendants(rt)
	}
	for _, p := range procs {
		want[p.PID] = p.StartTicks
	}
	for _, ref := range judge.Leftovers(e) {
		if _, ok := want[ref.PID]; !ok {
			want[ref.PID] = ref.StartTicks
		}
	}
	delete(want, e.PID)
	delete(want, os.Getpid())
	out := make([]probe.Process, 0, len(want))
	for pid, ticks := range want {
		if p, err := r.Prober.Process(pid, ticks); err == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b probe.Process) int { return a.PID - b.PID })
	return out
}

// walkDescendants is one /proc walk from a live root, for a reaper with no
// tree of it (a one-shot command, or a root the daemon does not keep).
func walkDescendants(rt proctree.Root) []proctree.Proc {
	t, err := proctree.New(proctree.Options{Walk: true})
	if err != nil {
		return nil
	}
	defer t.Close() //nolint:errcheck // a walk-mode tree holds nothing to close
	if t.Watch(rt) != nil {
		return nil // gone since the probe, or its pid reused: none of its own
	}
	procs, _ := t.Descendants(rt)
	return procs
}

// judgeOne sees e, judges it and, with record, stores a changed
// observation: every per-entity path's one step.
func (r *Reaper) judgeOne(ctx context.Context, e store.Entity, parentTerminal, record bool, ev judge.Event) (step, error) {
	now := r.now()
	var s step
	s.seen = r.see(ctx, e, parentTerminal, now, ev)
	if s.seen.Observed.Artifacts.Interrupted {
		// Interrupted: recording "unknown" would only flap its delivery.
		s.interrupted = true
		return s, nil
	}
	s.v = judge.Judge(e, s.seen, r.Settings.Settings, now)
	if !record || !s.v.Changed {
		return s, nil
	}
	wrote, err := r.Store.RecordObservation(ctx, e.Type, e.ID, s.v.Observation)
	if err != nil {
		return s, err
	}
	s.written = wrote
	if wrote {
		r.written.Add(1)
		r.logFlag(e, s.v.Observation)
	}
	return s, nil
}

// dropHostsWithDaemons removes other hosts' entities when that host has, or
// ever had, a daemon: it judges them, so no entity gets two verdicts in turn.
// When the store cannot say which, no remote entity is judged this sweep.
func (r *Reaper) dropHostsWithDaemons(ctx context.Context, list []store.Entity, hosts *daemonHosts) []store.Entity {
	remote := false
	for _, e := range list {
		if e.HostID != r.HostID && e.HostID != "" {
			remote = true
			break
		}
	}
	if !remote {
		return list // the common single-host case: no query
	}
	if !hosts.read {
		hosts.read = true
		var err error
		hosts.m, err = r.Store.DaemonHosts(ctx, time.Time{})
		if err != nil {
			r.log().Warn("cannot tell which hosts have a daemon; not judging other hosts' entities this sweep", errField(err))
			hosts.m = nil
		}
	}
	kept := list[:0]
	for _, e := range list {
		if e.HostID == r.HostID || e.HostID == "" || (hosts.m != nil && !hosts.m[e.HostID]) {
			kept = append(kept, e)
		}
	}
	return kept
}

// daemonHosts is read once a sweep; nil when it could not be read.
type daemonHosts struct {
	m    map[string]bool
	read bool
}

// remoteSubject keeps only the pid and the posted heartbeat: the rest are
// paths on the other host.
func remoteSubject(t probe.Subject) probe.Subject {
	t.HeartbeatFile, t.SupervisorPID, t.LockFiles = "", 0, nil
	t.SkipArtifacts = true
	return t
}
