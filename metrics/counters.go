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

// The counters' gathering is kept between scrapes (ADR-0052): Metrics' methods
// bump a generation, and an unmoved one serves the kept, read-only families.

// cachedCounters is the counters' own registry and its last Gather's families.
type cachedCounters struct {
	reg *prometheus.Registry
	// src is synced before each gather, so every row committed before the scrape counts.
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
	// A failed Sync leaves the counters as they are.
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	_ = c.src.Sync(ctx)
	cancel()
	// Loaded before the gather: a counter moved during it is gathered next time.
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

// describedOnly describes the counters on the caller's registry, collecting
// nothing, so a second registration of their names still fails.
type describedOnly []prometheus.Collector

// Describe sends the counters' descriptors.
func (d describedOnly) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range d {
		c.Describe(ch)
	}
}

// Collect sends nothing: cachedCounters gathers the counters.
func (describedOnly) Collect(chan<- prometheus.Metric) {}

// Gatherer is what /metrics serves: g and the counters, sorted by name.
func (m *Metrics) Gatherer(g prometheus.Gatherer) prometheus.Gatherer {
	return merged{g, m.counters}
}

// merged is a Gatherer of two with no name in common.
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
