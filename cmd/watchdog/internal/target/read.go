package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"watchdog/attention"
	"watchdog/docs"
	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/wire"
)

// Judged is who judged what a database's entities show, and when: a
// store keeps the last judgement of each entity, and without a daemon
// nothing judges them again, so a process killed since still reads
// "Running · Alive". Only a database has one to tell; through a daemon's
// API the daemon is the judge.
type Judged struct {
	// DaemonServing says whether a watchdog daemon serves the database
	// now.
	DaemonServing bool
	// LastAt is the last time a daemon recorded its presence in the
	// database (zero: no daemon ever did), and LastBy its host.
	LastAt time.Time
	LastBy string
}

// List implements Target: the entities f selects, each state derived as
// the daemon's view derives it (live.Derive) and selected by the API's
// rule (wire.EntityFilter), unsorted. With o.History each entity carries
// its whole audit rows (`status --json`), as the daemon's entity read
// does. The heartbeat shown is the one judged: this host's heartbeat
// files are read here, as the daemon's own reads do; so are this host's
// open entities' processes with o.Process.
func (l *Local) List(ctx context.Context, f wire.EntityFilter, o ListOptions) (wire.EntityList, error) {
	names, err := l.hostNames(ctx)
	if err != nil {
		return wire.EntityList{}, err
	}
	if f.Host, err = wire.ResolveHost(f.Host, names); err != nil {
		return wire.EntityList{}, err
	}
	list, err := l.st.List(ctx, store.Filter{Type: f.Type, HostID: f.Host})
	if err != nil {
		return wire.EntityList{}, err
	}
	now := time.Now()
	hb := l.beats()
	var procs *wire.Processes
	if o.Process {
		procs = Processes(l.host)
	}
	items := make([]wire.Entity, 0, len(list))
	for _, e := range list {
		ns := live.Derive(e, now).State
		if !f.Keeps(&e, ns) {
			continue
		}
		var rows []store.AuditRow
		if o.History {
			if rows, err = l.st.Transitions(ctx, e.Type, e.ID); err != nil {
				return wire.EntityList{}, err
			}
		}
		item := wire.FromDerived(e, ns, rows, hb, now)
		item.HostName = names[item.HostID]
		item.Process = procs.Of(&e, now)
		item.Leftovers = procs.LeftoversOf(&e, now)
		items = append(items, item)
	}
	return wire.EntityList{GeneratedAt: unixtime.Of(now), Items: items, Total: len(items)}, nil
}

// Queue implements Target: the queue built from the store under q's
// failure window, each item with the heartbeat its entity is judged by.
func (l *Local) Queue(ctx context.Context, q attention.Query) (attention.Queue, error) {
	names, err := l.hostNames(ctx)
	if err != nil {
		return attention.Queue{}, err
	}
	if q.Host, err = wire.ResolveHost(q.Host, names); err != nil {
		return attention.Queue{}, err
	}
	var src attention.Source = l.st
	if q.Host != "" {
		src = hostSource{Backend: l.st, host: q.Host}
	}
	now := time.Now()
	queue, err := attention.Read(ctx, src, q, now)
	if err != nil {
		return attention.Queue{}, err
	}
	if err := l.fillHeartbeats(ctx, &queue, now); err != nil {
		return attention.Queue{}, err
	}
	// The daemon's rule for what to do and where to read more (docs.For),
	// so the two queues print the same items.
	queue.FillRunbook(func(code state.ReasonCode) (string, string, bool) {
		td, ok := docs.For(l.runbook, string(code))
		return td.Link, td.Do, ok
	})
	return queue, nil
}

// hostNames is the hostname each host's daemon recorded, and this host's
// own where no daemon of it did: what --host accepts besides an id, and
// what the HOST column shows.
func (l *Local) hostNames(ctx context.Context) (map[string]string, error) {
	names, err := l.st.HostNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the hosts' names: %w", err)
	}
	if names == nil {
		names = map[string]string{}
	}
	if id := l.host.HostID(); names[id] == "" {
		if name, err := os.Hostname(); err == nil {
			names[id] = name
		}
	}
	return names, nil
}

// observedReader is a store that keeps when a judgement last wrote each
// host's entities (an SQLite file: its lone daemon records no presence
// while it runs).
type observedReader interface {
	LastObserved(ctx context.Context) (map[string]time.Time, error)
}

// hostSource is the queue's source for a host's items on a database: the
// host's entities, whole. The store's AttentionCandidates reads only the
// columns an item needs, without host_id, so the queue could not tell
// whose they are; the failure window is applied by attention.Build all
// the same.
type hostSource struct {
	store.Backend
	host string
}

func (h hostSource) AttentionCandidates(ctx context.Context, _ time.Time) ([]store.Entity, error) {
	return h.List(ctx, store.Filter{HostID: h.host})
}

// fillHeartbeats gives each item of queue the heartbeat its entity is
// judged by, as List and the daemon's queue show it: this host's
// heartbeat files are stat'ed here. The queue's candidates carry only the
// columns an item needs, so the page's entities are read whole, one by
// one (at most the query's limit). An entity gone since the queue was
// read has none.
func (l *Local) fillHeartbeats(ctx context.Context, queue *attention.Queue, now time.Time) error {
	beats := l.beats()
	var failed error
	queue.FillHeartbeats(func(typ, id string) *state.JudgedHeartbeat {
		if failed != nil {
			return nil
		}
		e, err := l.st.Get(ctx, typ, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			failed = err
			return nil
		}
		return beats.Of(&e, now)
	})
	return failed
}

// Judged implements Target: who judges the database now, and who last
// did.
//
// Whether a daemon serves it: on an SQLite file, whether any daemon holds
// its lock (sqlite.DaemonLockHeld), which the kernel drops the moment the
// daemon dies; where that cannot be told (PostgreSQL, no /proc/locks),
// whether a daemon recorded its presence within disconnectedAfter (the
// config's thresholds.host_disconnected_after, the silence after which
// the fleet's leader itself calls a host disconnected).
//
// When it last judged: now, on an SQLite file whose lock a daemon of a
// recorded host holds; else the later of the newest presence record and
// the newest observation a host's judgement wrote (observedReader). A
// daemon marks its presence at its start and its stop (and every few
// seconds while it shares the store); one killed records no stop, and
// its last observation is then the last moment known of its judgement,
// where its start alone would say hours too early. Neither is an idle
// write: the observation's own time is kept with it.
func (l *Local) Judged(ctx context.Context, disconnectedAfter time.Duration, now time.Time) (*Judged, error) {
	seen, err := l.st.DaemonsSeen(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the daemons' presence: %w", err)
	}
	var j Judged
	// Presence alone says whether a daemon serves the store (where its
	// lock cannot be read): an observation may be a one-shot command's.
	var present time.Time
	for _, at := range seen {
		if at.After(present) {
			present = at
		}
	}
	if or, ok := l.st.(observedReader); ok {
		last, err := or.LastObserved(ctx)
		if err != nil {
			return nil, err
		}
		for host, at := range last {
			if _, daemon := seen[host]; daemon && at.After(seen[host]) {
				seen[host] = at
			}
		}
	}
	for host, at := range seen {
		if at.After(j.LastAt) || (at.Equal(j.LastAt) && host < j.LastBy) {
			j.LastAt, j.LastBy = at, host
		}
	}
	if held, known := sqlite.DaemonLockHeld(l.db); known {
		j.DaemonServing = held
		// A daemon alone with its file records its presence at start
		// and stop only (ADR-0041): while its lock is held it judges now.
		if locks, err := sqlite.ReadDaemonLocks(l.db); err == nil && held {
			by := ""
			for host := range seen {
				if locks.Holds(host) && (by == "" || host < by) {
					by = host
				}
			}
			if by != "" {
				j.LastAt, j.LastBy = now, by
			}
		}
	} else {
		j.DaemonServing = !present.IsZero() && now.Sub(present) < disconnectedAfter
	}
	return &j, nil
}

// List implements Target: every page of the daemon's list (with
// o.Process, its own entities' process facts, read by the daemon), and
// with o.History each entity's whole audit rows, as Local's List has them.
func (r *Remote) List(ctx context.Context, f wire.EntityFilter, o ListOptions) (wire.EntityList, error) {
	out, err := r.c.List(ctx, f, o.Process)
	if err != nil {
		return wire.EntityList{}, err
	}
	if o.History {
		for i := range out.Items {
			e := &out.Items[i]
			rows, err := r.c.Transitions(ctx, e.Type, e.ID)
			if err != nil {
				return wire.EntityList{}, err
			}
			n := len(rows)
			e.Transitions, e.TransitionsTotal = &rows, &n
		}
	}
	return out, nil
}

// Queue implements Target: the daemon's queue under its own failure
// window (q's is not sent).
func (r *Remote) Queue(ctx context.Context, q attention.Query) (attention.Queue, error) {
	return r.c.Attention(ctx, q)
}

// Judged implements Target: nil, the daemon is the judge.
func (*Remote) Judged(context.Context, time.Duration, time.Time) (*Judged, error) {
	return nil, nil
}

// Dismiss implements Target: the snooze or dismissal recorded in the
// store, the item looked for in the queue under failureWindow at now.
func (l *Local) Dismiss(ctx context.Context, d attention.Dismissing, now time.Time, failureWindow time.Duration) error {
	_, err := attention.Dismiss(ctx, l.st, d, now, failureWindow)
	return err
}

// DismissAll implements Target: the cluster read from the queue the store
// holds under failureWindow at now, then every row and its triage log
// entry in one transaction.
func (l *Local) DismissAll(ctx context.Context, b attention.Bulk, cluster string, now time.Time, failureWindow time.Duration) ([]string, error) {
	if cluster != "" {
		id, err := attention.ParseCluster(cluster)
		if err != nil {
			return nil, err
		}
		q, err := attention.Read(ctx, l.st, attention.ClusterQuery(failureWindow), now)
		if err != nil {
			return nil, err
		}
		if b.Fingerprints, err = attention.ClusterMembers(q, id); err != nil {
			return nil, err
		}
	}
	got, err := attention.DismissAll(ctx, l.st, b, now, failureWindow)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(got.Dismissals))
	for i, d := range got.Dismissals {
		out[i] = d.Fingerprint
	}
	return out, nil
}

// DismissAll implements Target: POST /api/attention/snooze (b.Until set)
// or /dismiss with the fingerprints or the cluster; the daemon resolves
// the cluster in its own queue and records its own principal.
func (r *Remote) DismissAll(ctx context.Context, b attention.Bulk, cluster string, _ time.Time, _ time.Duration) ([]string, error) {
	return r.c.Triage(ctx, b.Fingerprints, cluster, b.Until)
}

// Dismiss implements Target: POST /api/attention/snooze (d.Until set) or
// /dismiss. The daemon looks for the item in its own queue and records its
// own principal, so only the fingerprint and the snooze's end are sent.
func (r *Remote) Dismiss(ctx context.Context, d attention.Dismissing, _ time.Time, _ time.Duration) error {
	if !d.Until.IsZero() {
		return r.c.Snooze(ctx, d.Fingerprint, d.Until)
	}
	return r.c.Dismiss(ctx, d.Fingerprint)
}
