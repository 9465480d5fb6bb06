package attention

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

// Build assembles the queue from entities (any subset that includes every
// entity that may have items; others are skipped), the dismissals keyed by
// fingerprint, and the query (its Host keeps that host's entities only,
// as the live view's queue does: the entities must then carry their
// HostID, which the stores' AttentionCandidates do not read). Items are sorted most severe first, then most
// recently updated, then by fingerprint, so the order is stable across
// polls; cluster sizes, the total and by_severity count the whole selected
// queue before the limit.
func Build(entities []store.Entity, dismissals map[string]store.Dismissal, q Query, now time.Time) Queue {
	var all []Item
	for _, e := range entities {
		if q.Host != "" && e.HostID != q.Host {
			continue
		}
		all = append(all, ItemsOf(e, now, q.FailureWindow)...)
	}
	return Assemble(all, dismissals, q, now)
}

// Key is an item's place in the queue's order: most severe first, then
// most recently updated, then by fingerprint, so the order is total and
// stable across polls. Assemble sorts by it, and the live view keeps its
// items in it as entities change.
type Key struct {
	rank        int
	updated     int64
	fingerprint string
}

// KeyOf is it's place in the queue's order.
func KeyOf(it *Item) Key {
	return Key{rank: it.Severity.Rank(), updated: it.LastUpdatedAt.UnixNano(), fingerprint: it.Fingerprint}
}

// Fingerprint is the fingerprint of k's item.
func (k Key) Fingerprint() string { return k.fingerprint }

// Compare orders k before o (-1), after it (1) or equal (0, the same
// fingerprint).
func (k Key) Compare(o Key) int {
	if k.rank != o.rank {
		return cmp.Compare(k.rank, o.rank)
	}
	if k.updated != o.updated {
		return -cmp.Compare(k.updated, o.updated)
	}
	return strings.Compare(k.fingerprint, o.fingerprint)
}

// Assemble is Build from the items already found (ItemsOf, or the live
// view's ItemsFor of the entities inside the failure window): the query's
// severity filter and the dismissals applied, sorted, counted and cut to
// the limit. all is not modified.
func Assemble(all []Item, dismissals map[string]store.Dismissal, q Query, now time.Time) Queue {
	out := Queue{GeneratedAt: unixtime.Of(now), BySeverity: map[state.Severity]int{}, Items: []Item{}}
	for _, s := range Severities {
		out.BySeverity[s] = 0
	}
	// The selection is sorted by index: items are large, and only the
	// page is copied out.
	type sel struct {
		i         int
		key       Key
		dismissal *store.Dismissal
	}
	picked := make([]sel, 0, len(all))
	clusters := map[string]int{}
	for i := range all {
		it := &all[i]
		if len(q.Severities) > 0 && !slices.Contains(q.Severities, it.Severity) {
			continue
		}
		s := sel{i: i, key: KeyOf(it)}
		if d, ok := Acknowledgement(dismissals, it, now); ok {
			if !q.IncludeDismissed {
				continue
			}
			s.dismissal = &d
		}
		picked = append(picked, s)
		clusters[it.ClusterID]++
		out.BySeverity[it.Severity]++
	}
	slices.SortFunc(picked, func(a, b sel) int { return a.key.Compare(b.key) })
	out.Total = len(picked)
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(picked) > limit {
		picked = picked[:limit]
	}
	for _, s := range picked {
		it := all[s.i].At(now)
		it.ClusterSize = clusters[it.ClusterID]
		if s.dismissal != nil {
			it.MarkDismissed(*s.dismissal)
		}
		out.Items = append(out.Items, it)
	}
	return out
}

// Source is what Read reads: the entities that may have items and the
// dismissals (sqlite.Store; the API's store).
type Source interface {
	AttentionCandidates(ctx context.Context, since time.Time) ([]store.Entity, error)
	Dismissals(ctx context.Context) (map[string]store.Dismissal, error)
}

// Read is the queue the API serves and `watchdog attention` prints: the
// candidates inside q's failure window and every dismissal, built at now.
// The store's errors pass as they are: they name their query already, and
// the command prints them unchanged.
func Read(ctx context.Context, src Source, q Query, now time.Time) (Queue, error) {
	list, err := src.AttentionCandidates(ctx, Since(now, q.FailureWindow))
	if err != nil {
		return Queue{}, err
	}
	dismissals, err := src.Dismissals(ctx)
	if err != nil {
		return Queue{}, err
	}
	return Build(list, dismissals, q, now), nil
}
