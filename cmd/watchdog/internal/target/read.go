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

// Judged is who judged what a database's entities show, and when: without
// a daemon nothing judges them again, so a process killed since still
// reads "Running · Alive".
type Judged struct {
	// DaemonServing says whether a watchdog daemon serves the database now.
	DaemonServing bool
	// LastAt is a daemon's last presence in the database (zero: never), LastBy its host.
	LastAt time.Time
	LastBy string
}

// List implements Target: the entities f selects, derived as the daemon's
// view derives them (live.Derive), unsorted; this host's heartbeat files
// and processes are read here, as the daemon's reads do.
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

// Queue implements Target: the store's queue under q's failure window.
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
	// The daemon's runbook rule, so both queues print the same items.
	queue.FillRunbook(func(code state.ReasonCode) (string, string, bool) {
		td, ok := docs.For(l.runbook, string(code))
		return td.Link, td.Do, ok
	})
	return queue, nil
}

// hostNames is each host's daemon's recorded hostname, and this host's own:
// what --host accepts besides an id.
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

// observedReader is a store that keeps when each host was last judged.
type observedReader interface {
	LastObserved(ctx context.Context) (map[string]time.Time, error)
}

// hostSource is the queue's source for one host's items: the store's
// AttentionCandidates carry no host_id.
type hostSource struct {
	store.Backend
	host string
}

func (h hostSource) AttentionCandidates(ctx context.Context, _ time.Time) ([]store.Entity, error) {
	return h.List(ctx, store.Filter{HostID: h.host})
}

// fillHeartbeats gives each queue item its judged heartbeat; candidates
// are partial, so each page entity is read whole (at most the limit).
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

// Judged implements Target. Serving: on SQLite whether a daemon holds the
// file's lock (dropped the moment it dies), else presence within
// disconnectedAfter. Last judged: now under a held lock, else the later of
// the last presence and the last observation (a killed daemon records no
// stop).
func (l *Local) Judged(ctx context.Context, disconnectedAfter time.Duration, now time.Time) (*Judged, error) {
	seen, err := l.st.DaemonsSeen(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the daemons' presence: %w", err)
	}
	var j Judged
	// Presence alone decides serving: an observation may be a one-shot's.
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
		// A lone daemon records presence at start and stop only (ADR-0041).
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

// List implements Target: every page of the daemon's list, plus audit rows
// for o.History.
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

// Queue implements Target: the daemon's queue under its own window.
func (r *Remote) Queue(ctx context.Context, q attention.Query) (attention.Queue, error) {
	return r.c.Attention(ctx, q)
}

// Judged implements Target: nil, the daemon is the judge.
func (*Remote) Judged(context.Context, time.Duration, time.Time) (*Judged, error) {
	return nil, nil
}

// Dismiss implements Target: the item looked for in the store's queue.
func (l *Local) Dismiss(ctx context.Context, d attention.Dismissing, now time.Time, failureWindow time.Duration) error {
	_, err := attention.Dismiss(ctx, l.st, d, now, failureWindow)
	return err
}

// DismissAll implements Target: the cluster resolved in the store's queue,
// then every row and its triage log entry in one transaction.
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

// DismissAll implements Target: the daemon resolves and records it.
func (r *Remote) DismissAll(ctx context.Context, b attention.Bulk, cluster string, _ time.Time, _ time.Duration) ([]string, error) {
	return r.c.Triage(ctx, b.Fingerprints, cluster, b.Until)
}

// Dismiss implements Target: the daemon finds the item and records it.
func (r *Remote) Dismiss(ctx context.Context, d attention.Dismissing, _ time.Time, _ time.Duration) error {
	if !d.Until.IsZero() {
		return r.c.Snooze(ctx, d.Fingerprint, d.Until)
	}
	return r.c.Dismiss(ctx, d.Fingerprint)
}
