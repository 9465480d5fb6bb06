package attention

import (
	"cmp"
	"context"
	"iter"
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

// Assemble is Build from the items already found (ItemsOf): sorted into
// the queue's order (KeyOf), then AssembleOrdered. all is not modified.
func Assemble(all []Item, dismissals map[string]store.Dismissal, q Query, now time.Time) Queue {
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return KeyOf(&all[a]).Compare(KeyOf(&all[b])) })
	return AssembleOrdered(func(yield func(*Item) bool) {
		for _, i := range order {
			if !yield(&all[i]) {
				return
			}
		}
	}, dismissals, q, now)
}

// AssembleOrdered is the queue's one assembly, over items handed in the
// queue's order (the live view keeps them so, and sorts nothing): the
// query's severity filter and the dismissals applied, the total,
// by_severity and cluster sizes counted over the whole selection, the
// page cut at the limit and stamped at now.
func AssembleOrdered(items iter.Seq[*Item], dismissals map[string]store.Dismissal, q Query, now time.Time) Queue {
	out := Queue{GeneratedAt: unixtime.Of(now), BySeverity: map[state.Severity]int{}, Items: []Item{}}
	for _, s := range Severities {
		out.BySeverity[s] = 0
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	type pick struct {
		it        *Item
		dismissal *store.Dismissal
	}
	page := make([]pick, 0, min(limit, 64))
	clusters := map[string]int{}
	for it := range items {
		if len(q.Severities) > 0 && !slices.Contains(q.Severities, it.Severity) {
			continue
		}
		var dismissal *store.Dismissal
		if d, ok := Acknowledgement(dismissals, it, now); ok {
			if !q.IncludeDismissed {
				continue
			}
			dismissal = &d
		}
		out.Total++
		out.BySeverity[it.Severity]++
		clusters[it.ClusterID]++
		if len(page) < limit {
			page = append(page, pick{it, dismissal})
		}
	}
	out.Items = make([]Item, 0, len(page))
	for _, p := range page {
		it := p.it.At(now)
		it.ClusterSize = clusters[it.ClusterID]
		if p.dismissal != nil {
			it.MarkDismissed(*p.dismissal)
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
