// Package metrics exports watchdog's Prometheus metrics (docs/reference/metrics.md).
//
// Gauges about entities are computed at scrape time from the daemon's live
// view (package live): the group sizes it keeps as entities change, the
// reasons of the entities that count now and the queue's counts, after a
// Sync, so they are never stale and read the same view as the API, the
// queue and STATUS=. Counters of transitions and reaps come from the audit
// log through the view's feed (Follow), so a `watchdog transition --db`
// or an exec wrapper's write counts as much as the daemon's own; the
// rejection counter and the job histogram are updated by the callers
// through Metrics' methods: *Metrics is the transitions.Observer of the
// write path (rejections are not recorded anywhere else) and the observer
// of the reaper and its scheduler.
//
// Series never vanish while the process runs:
//   - watchdog_entities is pre-seeded at 0 for every entity type, every
//     severity and the tones that severity can have;
//   - watchdog_reasons_active for every registered code and severity;
//   - watchdog_attention_items for every entity type and critical,
//     warning and info;
//   - watchdog_entity_states is not pre-seeded: the product of types,
//     lifecycles, health and delivery values is thousands of series, most
//     of which never occur. A combination appears when first seen and then
//     stays (at 0 when empty) until the process restarts;
//   - watchdog_transitions_rejected_total for every type and cause, and
//     watchdog_job_runs_total and watchdog_job_duration_seconds for every
//     job (docs/reference/state-model.md, Scheduled jobs), start at 0;
//   - watchdog_transitions_total for every edge of every graph and every
//     actor, and watchdog_reaped_total for every reaper outcome
//     (reaper.Outcomes), start at 0.
//
// What the gauges count (the definitions of package live, shared with
// STATUS=, `watchdog status` and GET /api/attention):
//   - watchdog_entities and watchdog_entity_states: every non-legacy
//     entity, open or ended, however long ago;
//   - watchdog_reasons_active: the codes held by open entities and by
//     entities whose outcome is inside the failure window,
//     each under its own severity (state.ReasonSeverity);
//   - watchdog_attention_items: the queue items no dismissal or snooze
//     hides, by severity and entity type (summed over the types, GET
//     /api/attention's by_severity on a daemon alone on its store).
//
// In a fleet (several daemons on one store) every daemon's view, API and
// STATUS= show the whole fleet, but its entity gauges count only what it
// owns (Options.Owns: the entities of its own host, plus the host-less
// ones while it is the leader), so sum() across the daemons is the fleet
// with no entity counted twice. watchdog_leader says which daemon counts
// the host-less entities.
//
// Label values come only from closed vocabularies (entity types, lifecycle
// graphs, health and delivery values, registered reason codes, actors,
// causes, job names and results). A value outside them, which only a
// hand-edited database or a programming error can produce, is reported as
// "unknown", never under its own string, so cardinality stays bounded.
//
// A view that cannot sync does not fail the scrape: the entity gauges are
// left out and watchdog_scrape_collector_success{collector="store"} is 0
// (node_exporter's convention), which is what to alert on.
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

// Options say what this daemon owns in a fleet. The zero Options own
// everything: one daemon per store, today's behaviour.
type Options struct {
	// Owns reports whether the entities recorded on host ("" for
	// host-less ones) are this daemon's to count: its own host, plus the
	// host-less entities while it is the leader. The entity gauges
	// (watchdog_entities, watchdog_entity_states, watchdog_reasons_active,
	// watchdog_attention_items, watchdog_legacy_entities,
	// watchdog_leftover_processes) count only the
	// entities it owns, so sum() across the daemons of a fleet counts each
	// entity once. nil owns every host. It is called at every scrape, a few
	// times per host.
	Owns func(host string) bool
	// Leader reports whether this daemon runs the host-less jobs:
	// watchdog_leader. nil means always (a daemon alone on its store).
	Leader func() bool
}

// Feed is where the counters read the audit log; *live.View is one.
type Feed interface {
	OnTransitions(fn func([]store.AuditRow))
}

// ScrapeTimeout bounds the store queries of one scrape. Prometheus' own
// default scrape timeout is 10s; a store slower than this reports
// success 0 rather than making the whole scrape time out.
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
	// counters gathers the five counters above (counters.go); lastSweep
	// and the rest are registered on the caller's registry.
	counters *cachedCounters

	collector *storeCollector
	// fromFeed: the counters of transitions and reaps follow the audit
	// log (Follow), and the write path's and reaper's own calls are not
	// counted again.
	fromFeed atomic.Bool
	// watching is the source of watchdog_watched_processes (Watching).
	watching atomic.Pointer[func() (pidfd, polled int)]
	// overflows is the source of watchdog_pidwatch_overflow_total
	// (PidwatchOverflows).
	overflows atomic.Pointer[func() uint64]
	// judging is the source of the probe and write counters (Judging).
	judging atomic.Pointer[func() (probes, written uint64)]
	// files is the source of watchdog_heartbeat_files (HeartbeatFiles).
	files atomic.Pointer[func() (watched, polled int)]
	// tree is the source of watchdog_process_tree_mode and
	// watchdog_process_tree_overflow_total (ProcessTree).
	tree atomic.Pointer[TreeSource]
	// shed and conns are the HTTP server's bounds (conns.go).
	shed  *prometheus.CounterVec
	conns atomic.Pointer[func() (waiting, active int)]
	// streams are the page's event streams (streams.go).
	streams atomic.Pointer[func() StreamCounts]
}

// New registers every watchdog metric, the Go and process collectors on
// reg (never the global registry) and returns the handle the callers
// update. now is the clock of the failure window (nil means time.Now); o
// says what this daemon owns in a fleet.
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
			// From a sweep of an idle host (milliseconds) to a reaper run at
			// its max_per_run bound; 10 and 15 bracket the default sweep
			// interval that the WatchdogSweepSlow alert compares against.
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
	// Every edge of every graph by every actor (about 400 series) and every
	// reaper outcome: an alert on increase() must see the first event, and a
	// counter that appears at 1 has no increase to see.
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
		m.collector, watchingCollector{&m.watching}, overflowCollector{&m.overflows}, judgingCollector{&m.judging}, heartbeatFilesCollector{&m.files}, treeCollector{&m.tree}, leaderCollector{o.Leader}, m.shed, connsCollector{&m.conns}, streamsCollector{&m.streams},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// SetFailureWindow sets how long entities with an outcome count as
// attention items and active reasons (config thresholds.failure_window;
// default 24h), so the gauges count the same queue as GET /api/attention.
// It is the view's window: every reader of the view sees the change.
func (m *Metrics) SetFailureWindow(d time.Duration) { m.collector.src.SetFailureWindow(d) }

// Follow counts transitions and reaps from the audit rows f delivers from
// now on (the view's feed, which starts at the log's head when the daemon
// starts): every lifecycle change by any writer, the CLI's and exec's
// included. After Follow, Transitioned and Reaped count nothing, as the
// feed brings the same rows.
func (m *Metrics) Follow(f Feed) {
	m.fromFeed.Store(true)
	f.OnTransitions(m.countRows)
}

// actorReaper is transitions.ActorReaper, spelled here because metrics
// reads only transitions' vocabularies (internal/archtest); a test holds
// the two equal.
const actorReaper = "reaper"

// countRows counts audit rows: each row with a from (a registration has
// none) is a transition; one by the reaper is also a reap, under its
// reason code.
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

// Transitioned counts an applied transition (transitions.Observer), unless
// the counters follow the feed.
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

// Reaped counts one entity a reaper job moved (reaper.Observer), unless
// the counters follow the feed.
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

// JobRun counts one job run and, unless it was skipped, observes its
// duration (daemon.JobObserver).
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
	// seenStates remembers every watchdog_entity_states combination seen
	// since start, so a series that empties reports 0 instead of
	// vanishing. Bounded by the vocabularies (see the package doc).
	seenStates map[stateKey]struct{}
	// last and lastGauges are the counts of the last scrape and the
	// gauges made of them, sent again while the counts stay the same (an
	// idle daemon's every scrape): a const metric is built afresh each
	// time otherwise, about 140 KB of garbage a scrape for its 300-odd
	// pre-seeded series, which an idle daemon's heap carries until the
	// next collection (ADR-0052). A const metric is immutable, so two
	// scrapes may send the same ones.
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

// Collect runs the store queries and emits the gauges, or only
// success 0 when a query fails.
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

// gauges are the collector's gauges for n, c.seenStates updated with
// n's. Called with c.mu held.
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
	// A (type, severity, tone) outside the pre-seeded set can only come
	// from a severity rule this table does not know yet; report it rather
	// than lose it.
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
	// An item of an unknown type (a hand-edited row), or of a severity
	// that produces no items by the queue's rules, is reported rather than
	// lost.
	for k, v := range n.attention {
		if k.typ == unknown || !slices.Contains(attentionSeverities, k.severity) {
			add(prometheus.MustNewConstMetric(c.attention, prometheus.GaugeValue, float64(v), string(k.severity), k.typ))
		}
	}
	add(prometheus.MustNewConstMetric(c.legacy, prometheus.GaugeValue, float64(n.legacy)))
	// One series per type, pre-seeded at 0 (an alert on > 0 sees the
	// first), and unknown for a type no graph has: bounded by the graphs
	// (ADR-0008), never a pid or a command.
	for _, typ := range transitions.Types() {
		add(prometheus.MustNewConstMetric(c.leftovers, prometheus.GaugeValue, float64(n.leftovers[typ]), typ))
	}
	if v, ok := n.leftovers[unknown]; ok {
		add(prometheus.MustNewConstMetric(c.leftovers, prometheus.GaugeValue, float64(v), unknown))
	}
	return out
}

var attentionSeverities = []state.Severity{state.SeverityCritical, state.SeverityWarning, state.SeverityInfo}

// leaderDesc is watchdog_leader: whether this daemon runs the host-less
// jobs, and so counts the host-less entities in its gauges.
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
