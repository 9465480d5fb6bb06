// Package metrics exports watchdog's Prometheus metrics
// (docs/reference/metrics.md, ADR-0008, ADR-0027): entity gauges computed at
// scrape time from the live view for what this daemon owns, and counters
// following the audit log's feed, so every writer counts. Label values come
// only from closed vocabularies ("unknown" otherwise).
package metrics

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/reaper"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Source is what the scrape-time collector reads; *live.View is one.
type Source interface {
	Sync(ctx context.Context) error
	Groups(fn func(live.Group, int))
	ActiveReasons(now time.Time) map[live.ReasonKey]int
	QueueItems(now time.Time) map[live.ItemKey]int
	Leftovers(now time.Time) map[live.LeftoverKey]int
	SetFailureWindow(d time.Duration)
}

// Options say what this daemon owns in a fleet; the zero Options own everything.
type Options struct {
	// Owns reports whether host's entities ("" for host-less) are this daemon's
	// to count, so sum() across a fleet counts each once; nil owns every host.
	Owns func(host string) bool
	// Leader reports whether this daemon runs the host-less jobs; nil means always.
	Leader func() bool
}

// Feed is where the counters read the audit log; *live.View is one.
type Feed interface {
	OnTransitions(fn func([]store.AuditRow))
}

// ScrapeTimeout bounds one scrape's store queries, under Prometheus' 10s default.
const ScrapeTimeout = 5 * time.Second

// unknown is the label value for anything outside a vocabulary.
const unknown = "unknown"

// Metrics holds the counters the callers update and the scrape-time
// collector. Its methods are safe for concurrent use.
type Metrics struct {
	transitions *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	reaped      *prometheus.CounterVec
	jobRuns     *prometheus.CounterVec
	jobDuration *prometheus.HistogramVec
	lastSweep   prometheus.Gauge
	// counters gathers the five counters above (counters.go).
	counters *cachedCounters

	collector *storeCollector
	// fromFeed: the counters follow the audit log, so direct calls are not counted again.
	fromFeed atomic.Bool
	// watching is the source of watchdog_watched_processes (Watching).
	watching atomic.Pointer[func() (pidfd, polled int)]
	// overflows is the source of watchdog_pidwatch_overflow_total.
	overflows atomic.Pointer[func() uint64]
	// judging is the source of the probe and write counters (Judging).
	judging atomic.Pointer[func() (probes, written uint64)]
	// files is the source of watchdog_heartbeat_files (HeartbeatFiles).
	files atomic.Pointer[func() (watched, polled int)]
	// statsSkipped is the source of watchdog_heartbeat_file_stats_skipped_total.
	statsSkipped atomic.Pointer[func() uint64]
	// tree is the source of the process tree metrics (ProcessTree).
	tree atomic.Pointer[TreeSource]
	// shed and conns are the HTTP server's bounds (conns.go).
	shed  *prometheus.CounterVec
	conns atomic.Pointer[func() (waiting, active int)]
	// streams are the page's event streams (streams.go).
	streams atomic.Pointer[func() StreamCounts]
}

// New registers every watchdog metric, with the Go and process collectors, on
// reg (never the global registry); now is the failure window's clock (nil: time.Now).
func New(reg prometheus.Registerer, src Source, version string, now func() time.Time, o Options) (*Metrics, error) {
	if now == nil {
		now = time.Now
	}
	m := &Metrics{
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "watchdog_transitions_total",
			Help: "Lifecycle transitions applied through the write path, by entity type, edge and actor.",
		}, []string{"entity_type", "from", "to", "actor"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "watchdog_transitions_rejected_total",
			Help: "Transitions the write path or the API refused, by entity type and cause.",
		}, []string{"entity_type", "cause"}),
		reaped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "watchdog_reaped_total",
			Help: "Entities the reaper jobs moved (ended, blocked, closed), by entity type and reason code.",
		}, []string{"entity_type", "reason_code"}),
		jobRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "watchdog_job_runs_total",
			Help: "Scheduled job runs by job and result (ok, error, skipped, timeout).",
		}, []string{"job", "result"}),
		jobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "watchdog_job_duration_seconds",
			Help: "Duration of scheduled job runs that ran (skipped runs are not observed).",
			// 10 and 15 bracket the default sweep interval WatchdogSweepSlow compares against.
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120},
		}, []string{"job"}),
		lastSweep: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "watchdog_last_sweep_timestamp_seconds",
			Help: "Unix time at which the last sweep finished (0 before the first).",
		}),
		shed: newShedCounter(),
	}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "watchdog_build_info",
		Help: "Always 1; the labels carry the watchdog version and the Go version it was built with.",
	}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(version, runtime.Version()).Set(1)

	for _, t := range append(transitions.Types(), unknown) {
		for _, c := range transitions.Causes {
			m.rejected.WithLabelValues(t, c)
		}
	}
	// Every edge, actor and outcome at 0: an alert on increase() must see the first event.
	for _, t := range transitions.Types() {
		g, _ := transitions.Lookup(t)
		for from, tos := range g.Edges {
			for _, to := range tos {
				for _, a := range transitions.Actors {
					m.transitions.WithLabelValues(t, from, to, a)
				}
			}
		}
	}
	for t, codes := range reaper.Outcomes() {
		for _, c := range codes {
			m.reaped.WithLabelValues(t, string(c))
		}
	}
	for _, j := range reaper.JobNames {
		for _, r := range reaper.JobResults {
			m.jobRuns.WithLabelValues(j, r)
		}
		m.jobDuration.WithLabelValues(j)
	}

	m.counters = &cachedCounters{reg: prometheus.NewRegistry(), src: src}
	counters := []prometheus.Collector{m.transitions, m.reaped, m.rejected, m.jobRuns, m.jobDuration}
	for _, c := range counters {
		if err := m.counters.reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.collector = newStoreCollector(src, now, o.Owns)
	for _, c := range []prometheus.Collector{
		describedOnly(counters), m.lastSweep, buildInfo,
		m.collector, watchingCollector{&m.watching}, countCollector{overflowDesc, &m.overflows}, judgingCollector{&m.judging}, heartbeatFilesCollector{&m.files}, countCollector{statsSkippedDesc, &m.statsSkipped}, treeCollector{&m.tree}, leaderCollector{o.Leader}, m.shed, connsCollector{&m.conns}, streamsCollector{&m.streams},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SetFailureWindow sets the view's failure window: the gauges count the API's queue.
func (m *Metrics) SetFailureWindow(d time.Duration) { m.collector.src.SetFailureWindow(d) }

// Follow counts transitions and reaps from the audit rows f delivers, whoever
// wrote them; after it Transitioned and Reaped count nothing.
func (m *Metrics) Follow(f Feed) {
	m.fromFeed.Store(true)
	f.OnTransitions(m.countRows)
}

// actorReaper is transitions.ActorReaper, spelled here because metrics reads
// only transitions' vocabularies (internal/archtest); a test holds them equal.
const actorReaper = "reaper"

// countRows counts rows with a from as transitions, the reaper's also as reaps.
func (m *Metrics) countRows(rows []store.AuditRow) {
	for _, r := range rows {
		if r.From == nil {
			continue
		}
		m.countTransition(r.EntityType, *r.From, r.To, r.Actor)
		if r.Actor == actorReaper {
			m.countReap(r.EntityType, r.ReasonCode)
		}
	}
}

// Transitioned counts an applied transition (transitions.Observer), unless following the feed.
func (m *Metrics) Transitioned(entityType, from, to, actor string) {
	if m.fromFeed.Load() {
		return
	}
	m.countTransition(entityType, from, to, actor)
}

func (m *Metrics) countTransition(entityType, from, to, actor string) {
	typ := knownType(entityType)
	m.transitions.WithLabelValues(typ, knownState(typ, from), knownState(typ, to), oneOf(actor, transitions.Actors)).Inc()
	m.counters.changed()
}

// Rejected counts a refused transition (transitions.Observer).
func (m *Metrics) Rejected(entityType, cause string) {
	m.rejected.WithLabelValues(knownType(entityType), oneOf(cause, transitions.Causes)).Inc()
	m.counters.changed()
}

// Reaped counts one entity a reaper job moved (reaper.Observer), unless following the feed.
func (m *Metrics) Reaped(entityType, reasonCode string) {
	if m.fromFeed.Load() {
		return
	}
	m.countReap(entityType, reasonCode)
}

func (m *Metrics) countReap(entityType, reasonCode string) {
	code := reasonCode
	if !state.Registered(state.ReasonCode(code)) {
		code = unknown
	}
	m.reaped.WithLabelValues(knownType(entityType), code).Inc()
	m.counters.changed()
}

// JobRun counts one job run and, unless skipped, observes its duration.
func (m *Metrics) JobRun(job, result string, d time.Duration) {
	job = oneOf(job, reaper.JobNames)
	m.jobRuns.WithLabelValues(job, oneOf(result, reaper.JobResults)).Inc()
	if result != reaper.ResultSkipped {
		m.jobDuration.WithLabelValues(job).Observe(d.Seconds())
	}
	m.counters.changed()
}

// SweepFinished records the end of a sweep (reaper.Observer).
func (m *Metrics) SweepFinished(t time.Time) {
	m.lastSweep.Set(unixtime.Seconds(t))
}

// knownType maps a type to its canonical name, or "unknown".
func knownType(t string) string {
	if c, ok := transitions.CanonicalType(t); ok {
		return c
	}
	return unknown
}

// knownState keeps a lifecycle value of the type's graph, else "unknown".
func knownState(typ, s string) string {
	if g, err := transitions.Lookup(typ); err == nil && g.HasState(s) {
		return s
	}
	return unknown
}

func oneOf(v string, vocab []string) string {
	for _, x := range vocab {
		if x == v {
			return v
		}
	}
	return unknown
}

// storeCollector computes the entity gauges at scrape time.
type storeCollector struct {
	src  Source
	now  func() time.Time
	owns func(host string) bool // nil: every host

	mu sync.Mutex
	// seenStates keeps every combination seen, so an emptied series reports 0.
	seenStates map[stateKey]struct{}
	// last and lastGauges are the last scrape's counts and gauges, sent again
	// while the counts stay the same: immutable, and no garbage (ADR-0052).
	last       *counts
	lastGauges []prometheus.Metric

	entities, entityStates, reasons, attention, legacy *prometheus.Desc
	leftovers                                          *prometheus.Desc
	success, duration                                  *prometheus.Desc
}

type stateKey struct{ typ, lifecycle, health, delivery string }

func newStoreCollector(src Source, now func() time.Time, owns func(host string) bool) *storeCollector {
	return &storeCollector{
		src: src, now: now, owns: owns, seenStates: map[stateKey]struct{}{},
		entities: prometheus.NewDesc("watchdog_entities",
			"Entities this daemon owns by type and derived severity and tone (legacy entities excluded).",
			[]string{"entity_type", "severity", "tone"}, nil),
		entityStates: prometheus.NewDesc("watchdog_entity_states",
			"Entities this daemon owns by type and stored lifecycle, health and delivery (legacy entities excluded).",
			[]string{"entity_type", "lifecycle", "health", "delivery"}, nil),
		reasons: prometheus.NewDesc("watchdog_reasons_active",
			"Reason codes held by the open entities this daemon owns and by those that reached an outcome within the failure window, by the holder's severity.",
			[]string{"reason_code", "severity"}, nil),
		attention: prometheus.NewDesc("watchdog_attention_items",
			"Attention queue items of the entities this daemon owns, by severity and entity type, dismissed and snoozed items excluded.",
			[]string{"severity", "entity_type"}, nil),
		legacy: prometheus.NewDesc("watchdog_legacy_entities",
			"Entities with no lifecycle (imported before the vocabulary), kept out of every other entity metric.",
			nil, nil),
		leftovers: prometheus.NewDesc("watchdog_leftover_processes",
			"Processes the leftover findings (run.health.leftover_processes) name, of the open entities this daemon owns and those that ended within the failure window: descendants still running after their entity ended or its process died, as the last look saw them, by the entity's type.",
			[]string{"entity_type"}, nil),
		success: prometheus.NewDesc("watchdog_scrape_collector_success",
			"Whether a scrape-time collector succeeded (1) or its gauges were left out of this scrape (0).",
			[]string{"collector"}, nil),
		duration: prometheus.NewDesc("watchdog_scrape_collector_duration_seconds",
			"How long a scrape-time collector took.",
			[]string{"collector"}, nil),
	}
}

// Describe sends every descriptor the collector can emit.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.entities, c.entityStates, c.reasons, c.attention, c.legacy, c.leftovers, c.success, c.duration} {
		ch <- d
	}
}

// Collect emits the gauges, or only success 0 when the view cannot sync.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	counts, err := count(ctx, c.src, c.now(), c.owns)
	ok := 0.0
	if err == nil {
		ok = 1
		for _, m := range c.gaugesFor(counts) {
			ch <- m
		}
	}
	ch <- prometheus.MustNewConstMetric(c.success, prometheus.GaugeValue, ok, "store")
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, time.Since(start).Seconds(), "store")
}

// gaugesFor is gauges(n), or the last scrape's when n counts the same.
func (c *storeCollector) gaugesFor(n *counts) []prometheus.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && c.last.same(n) {
		return c.lastGauges
	}
	c.last, c.lastGauges = n, c.gauges(n)
	return c.lastGauges
}

// gauges are the collector's gauges for n, updating c.seenStates; c.mu held.
func (c *storeCollector) gauges(n *counts) []prometheus.Metric {
	var out []prometheus.Metric
	add := func(m prometheus.Metric) { out = append(out, m) }
	for _, typ := range transitions.Types() {
		for _, sev := range state.Severities {
			for _, tone := range state.SeverityTones[sev] {
				add(prometheus.MustNewConstMetric(c.entities, prometheus.GaugeValue,
					float64(n.entities[entityKey{typ, sev, tone}]), typ, string(sev), string(tone)))
			}
		}
	}
	// A (type, severity, tone) outside the pre-seeded set is reported, not lost.
	for k, v := range n.entities {
		if !slices.Contains(state.SeverityTones[k.severity], k.tone) || k.typ == unknown {
			add(prometheus.MustNewConstMetric(c.entities, prometheus.GaugeValue, float64(v), k.typ, string(k.severity), string(k.tone)))
		}
	}

	for k := range n.states {
		c.seenStates[k] = struct{}{}
	}
	for k := range c.seenStates {
		add(prometheus.MustNewConstMetric(c.entityStates, prometheus.GaugeValue, float64(n.states[k]), k.typ, k.lifecycle, k.health, k.delivery))
	}

	for _, r := range state.Reasons() {
		for _, sev := range state.Severities {
			add(prometheus.MustNewConstMetric(c.reasons, prometheus.GaugeValue,
				float64(n.reasons[reasonKey{r.Code, sev}]), string(r.Code), string(sev)))
		}
	}
	for k, v := range n.reasons {
		if k.code == unknown {
			add(prometheus.MustNewConstMetric(c.reasons, prometheus.GaugeValue, float64(v), unknown, string(k.severity)))
		}
	}
	for _, typ := range transitions.Types() {
		for _, sev := range attentionSeverities {
			add(prometheus.MustNewConstMetric(c.attention, prometheus.GaugeValue, float64(n.attention[itemKey{sev, typ}]), string(sev), typ))
		}
	}
	// An item of an unknown type or an itemless severity is reported, not lost.
	for k, v := range n.attention {
		if k.typ == unknown || !slices.Contains(attentionSeverities, k.severity) {
			add(prometheus.MustNewConstMetric(c.attention, prometheus.GaugeValue, float64(v), string(k.severity), k.typ))
		}
	}
	add(prometheus.MustNewConstMetric(c.legacy, prometheus.GaugeValue, float64(n.legacy)))
	// One series per type at 0, so an alert on > 0 sees the first (ADR-0008).
	for _, typ := range transitions.Types() {
		add(prometheus.MustNewConstMetric(c.leftovers, prometheus.GaugeValue, float64(n.leftovers[typ]), typ))
	}
	if v, ok := n.leftovers[unknown]; ok {
		add(prometheus.MustNewConstMetric(c.leftovers, prometheus.GaugeValue, float64(v), unknown))
	}
	return out
}

var attentionSeverities = []state.Severity{state.SeverityCritical, state.SeverityWarning, state.SeverityInfo}

// leaderDesc is watchdog_leader.
var leaderDesc = prometheus.NewDesc("watchdog_leader",
	"1 when this daemon is the leader of its store: it runs the host-less jobs and its gauges count the host-less entities; 0 otherwise.",
	nil, nil)

// leaderCollector reads Options.Leader at scrape time.
type leaderCollector struct{ leader func() bool }

// Describe sends watchdog_leader's descriptor.
func (c leaderCollector) Describe(ch chan<- *prometheus.Desc) { ch <- leaderDesc }

// Collect emits watchdog_leader.
func (c leaderCollector) Collect(ch chan<- prometheus.Metric) {
	v := 1.0
	if c.leader != nil && !c.leader() {
		v = 0
	}
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, v)
}
