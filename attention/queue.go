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

// Build assembles the queue from entities, dismissals and query. A q.Host
// filter needs the entities' HostID, which AttentionCandidates does not read.
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

// Key is an item's place in the queue's order: most severe, most recently
// updated, then fingerprint: total and stable across polls.
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

// Compare orders k before o (-1), after it (1) or equal (0).
func (k Key) Compare(o Key) int {
	if k.rank != o.rank {
		return cmp.Compare(k.rank, o.rank)
	}
	if k.updated != o.updated {
		return -cmp.Compare(k.updated, o.updated)
	}
	return strings.Compare(k.fingerprint, o.fingerprint)
}

// Assemble is Build from the items already found; all is not modified.
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

// AssembleOrdered is the queue's one assembly, over items in the queue's
// order: the counts cover the whole selection, then the page is cut.
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

// Source is what Read reads: the candidates and the dismissals.
type Source interface {
	AttentionCandidates(ctx context.Context, since time.Time) ([]store.Entity, error)
	Dismissals(ctx context.Context) (map[string]store.Dismissal, error)
}

// Read is the queue the API serves and `watchdog attention` prints.
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
