package metrics

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The counters' gathering, kept between scrapes (ADR-0052, fifth step).
// The counters are pre-seeded at 0 for every edge, actor, cause, outcome
// and job (about 600 of a scrape's 1,000 series, package comment), and a
// registry's Gather makes every series anew at every scrape: about 200 KB
// of garbage a scrape at 10,000 entities, nearly half of it, which a
// quiet daemon scraped every few seconds carries as resident memory until
// its next collection. Only Metrics' own methods move these counters, so
// each bumps a generation; a scrape gathers them again only when the
// generation moved since the last, and otherwise serves the families it
// kept (read-only: the encoders never write to them).

// cachedCounters is the counters' own registry and the families its last
// Gather made.
type cachedCounters struct {
	reg *prometheus.Registry
	// src is synced before each gather: the feed's counters (Follow) then
	// count every audit row committed before the scrape began.
	src Source
	gen atomic.Uint64

	mu  sync.Mutex
	at  uint64 // the generation mfs were gathered at
	mfs []*dto.MetricFamily
}

// changed says a counter moved: the next scrape gathers them again.
func (c *cachedCounters) changed() { c.gen.Add(1) }

// Gather implements prometheus.Gatherer.
func (c *cachedCounters) Gather() ([]*dto.MetricFamily, error) {
	// A failed Sync leaves the counters as they are (the store collector
	// reports the failure).
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	_ = c.src.Sync(ctx)
	cancel()
	// Loaded before the gather: a counter moved during it is gathered
	// again at the next scrape, never left out.
	g := c.gen.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mfs != nil && c.at == g {
		return c.mfs, nil
	}
	mfs, err := c.reg.Gather()
	if err != nil {
		return mfs, err
	}
	c.mfs, c.at = mfs, g
	return mfs, nil
}

// describedOnly describes the counters on the caller's registry and
// collects nothing there (the counters are gathered by cachedCounters):
// a second registration of the same names on that registry still fails,
// as it did when the counters were registered on it.
type describedOnly []prometheus.Collector

// Describe sends the counters' descriptors.
func (d describedOnly) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range d {
		c.Describe(ch)
	}
}

// Collect sends nothing: cachedCounters gathers the counters.
func (describedOnly) Collect(chan<- prometheus.Metric) {}

// Gatherer is what /metrics serves: g (the registry New registered on)
// and the counters, in one list sorted by name as a registry's is.
func (m *Metrics) Gatherer(g prometheus.Gatherer) prometheus.Gatherer {
	return merged{g, m.counters}
}

// merged is a Gatherer of two with no name in common (New registers the
// counters' descriptors on the first, which refuses any other collector
// of those names).
type merged struct {
	a prometheus.Gatherer
	b *cachedCounters
}

// Gather implements prometheus.Gatherer.
func (g merged) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.a.Gather()
	cs, cerr := g.b.Gather()
	out := make([]*dto.MetricFamily, 0, len(mfs)+len(cs))
	out = append(append(out, mfs...), cs...)
	slices.SortFunc(out, func(x, y *dto.MetricFamily) int { return strings.Compare(x.GetName(), y.GetName()) })
	return out, errors.Join(err, cerr)
}
