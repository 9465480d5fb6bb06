package metrics

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

var testNow = time.Date(2026, 5, 24, 12, 0, 0, 0, time.UTC)

func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "watchdog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fixture drives a real store through the real write path.
type fixture struct {
	t  testing.TB
	st *sqlite.Store
	w  *transitions.Writer
}

func newFixture(t testing.TB) *fixture {
	st := openStore(t)
	return &fixture{t: t, st: st, w: &transitions.Writer{Store: st, Now: func() time.Time { return testNow }}}
}

func (f *fixture) register(typ, id, lifecycle string) {
	f.t.Helper()
	e := store.Entity{Type: typ, ID: id}
	reg := transitions.Registration{Entity: e, Actor: transitions.ActorOrchestrator, Legacy: lifecycle == ""}
	if lifecycle != "" {
		reg.Entity.Lifecycle = &lifecycle
	}
	if _, err := f.w.Register(context.Background(), reg); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) move(typ, id, to string, code state.ReasonCode) {
	f.t.Helper()
	req := transitions.Request{Type: typ, ID: id, To: to, Actor: transitions.ActorOrchestrator, Timeout: 60 * time.Second}
	if code != "" {
		req.Reason = &state.StateReason{Code: code}
	}
	if _, err := f.w.Transition(context.Background(), req); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) observe(typ, id string, h state.Health, d state.Delivery, codes ...state.ReasonCode) {
	f.t.Helper()
	ctx := context.Background()
	cur, err := f.st.Get(ctx, typ, id)
	if err != nil {
		f.t.Fatal(err)
	}
	var reasons []state.StateReason
	for _, c := range codes {
		reasons = append(reasons, state.Observed(c, string(c)))
	}
	now := float64(testNow.Unix())
	if _, err := f.st.RecordObservation(ctx, typ, id, store.Observation{Health: h, Delivery: d, Reasons: reasons, HealthSince: unixAt(now), SeenSeq: cur.LastSeq, At: unixAt(now)}); err != nil {
		f.t.Fatal(err)
	}
}

func newMetrics(t testing.TB, st *sqlite.Store) (*Metrics, prometheus.Gatherer) {
	t.Helper()
	return newMetricsAt(t, st, testNow)
}

// newMetricsAt reads st through a live view, as the daemon does; the
// view is not loaded, so the first scrape's Sync loads it.
func newMetricsAt(t testing.TB, st *sqlite.Store, now time.Time) (*Metrics, prometheus.Gatherer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	clock := func() time.Time { return now }
	m, err := New(reg, live.New(st, clock, 0), "v1.2.3", clock, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, m.Gatherer(reg)
}

// entitiesBlock is watchdog_entities for a store with one running session
// (info), one failed session (critical), one planned play (neutral) and
// one partially delivered workflow (warning): every type, severity and
// possible tone is present, at 0 when empty.
const entitiesBlock = `
# HELP watchdog_entities Entities this daemon owns by type and derived severity and tone (legacy entities excluded).
# TYPE watchdog_entities gauge
` + `watchdog_entities{entity_type="agent",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="agent",severity="info",tone="info"} 0
watchdog_entities{entity_type="agent",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="agent",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="agent",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="agent",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="invocation",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="invocation",severity="info",tone="info"} 0
watchdog_entities{entity_type="invocation",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="invocation",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="invocation",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="invocation",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="play",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="play",severity="info",tone="info"} 0
watchdog_entities{entity_type="play",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="play",severity="neutral",tone="neutral"} 1
watchdog_entities{entity_type="play",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="play",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="schedule",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="schedule",severity="info",tone="info"} 0
watchdog_entities{entity_type="schedule",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="schedule",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="schedule",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="schedule",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="session",severity="critical",tone="danger"} 1
watchdog_entities{entity_type="session",severity="info",tone="info"} 1
watchdog_entities{entity_type="session",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="session",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="session",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="session",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="show",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="show",severity="info",tone="info"} 0
watchdog_entities{entity_type="show",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="show",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="show",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="show",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="subagent",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="subagent",severity="info",tone="info"} 0
watchdog_entities{entity_type="subagent",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="subagent",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="subagent",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="subagent",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="team",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="team",severity="info",tone="info"} 0
watchdog_entities{entity_type="team",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="team",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="team",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="team",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="turn",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="turn",severity="info",tone="info"} 0
watchdog_entities{entity_type="turn",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="turn",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="turn",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="turn",severity="warning",tone="warning"} 0
watchdog_entities{entity_type="workflow",severity="critical",tone="danger"} 0
watchdog_entities{entity_type="workflow",severity="info",tone="info"} 0
watchdog_entities{entity_type="workflow",severity="info",tone="neutral"} 0
watchdog_entities{entity_type="workflow",severity="neutral",tone="neutral"} 0
watchdog_entities{entity_type="workflow",severity="neutral",tone="success"} 0
watchdog_entities{entity_type="workflow",severity="warning",tone="warning"} 1
`

const storeBlock = `
# HELP watchdog_attention_items Attention queue items of the entities this daemon owns, by severity and entity type, dismissed and snoozed items excluded.
# TYPE watchdog_attention_items gauge
watchdog_attention_items{entity_type="agent",severity="critical"} 0
watchdog_attention_items{entity_type="agent",severity="info"} 0
watchdog_attention_items{entity_type="agent",severity="warning"} 0
watchdog_attention_items{entity_type="invocation",severity="critical"} 0
watchdog_attention_items{entity_type="invocation",severity="info"} 0
watchdog_attention_items{entity_type="invocation",severity="warning"} 0
watchdog_attention_items{entity_type="play",severity="critical"} 0
watchdog_attention_items{entity_type="play",severity="info"} 0
watchdog_attention_items{entity_type="play",severity="warning"} 0
watchdog_attention_items{entity_type="schedule",severity="critical"} 0
watchdog_attention_items{entity_type="schedule",severity="info"} 0
watchdog_attention_items{entity_type="schedule",severity="warning"} 0
watchdog_attention_items{entity_type="session",severity="critical"} 1
watchdog_attention_items{entity_type="session",severity="info"} 0
watchdog_attention_items{entity_type="session",severity="warning"} 0
watchdog_attention_items{entity_type="show",severity="critical"} 0
watchdog_attention_items{entity_type="show",severity="info"} 0
watchdog_attention_items{entity_type="show",severity="warning"} 0
watchdog_attention_items{entity_type="subagent",severity="critical"} 0
watchdog_attention_items{entity_type="subagent",severity="info"} 0
watchdog_attention_items{entity_type="subagent",severity="warning"} 0
watchdog_attention_items{entity_type="team",severity="critical"} 0
watchdog_attention_items{entity_type="team",severity="info"} 0
watchdog_attention_items{entity_type="team",severity="warning"} 0
watchdog_attention_items{entity_type="turn",severity="critical"} 0
watchdog_attention_items{entity_type="turn",severity="info"} 0
watchdog_attention_items{entity_type="turn",severity="warning"} 0
watchdog_attention_items{entity_type="workflow",severity="critical"} 0
watchdog_attention_items{entity_type="workflow",severity="info"} 0
watchdog_attention_items{entity_type="workflow",severity="warning"} 1
# HELP watchdog_entity_states Entities this daemon owns by type and stored lifecycle, health and delivery (legacy entities excluded).
# TYPE watchdog_entity_states gauge
watchdog_entity_states{delivery="not_expected",entity_type="play",health="unknown",lifecycle="planned"} 1
watchdog_entity_states{delivery="not_expected",entity_type="session",health="running",lifecycle="running"} 1
watchdog_entity_states{delivery="not_expected",entity_type="session",health="unknown",lifecycle="failed"} 1
watchdog_entity_states{delivery="partial",entity_type="workflow",health="running",lifecycle="running"} 1
# HELP watchdog_legacy_entities Entities with no lifecycle (imported before the vocabulary), kept out of every other entity metric.
# TYPE watchdog_legacy_entities gauge
watchdog_legacy_entities 1
# HELP watchdog_scrape_collector_success Whether a scrape-time collector succeeded (1) or its gauges were left out of this scrape (0).
# TYPE watchdog_scrape_collector_success gauge
watchdog_scrape_collector_success{collector="store"} 1
`

func knownStore(t *testing.T) *fixture {
	f := newFixture(t)
	f.register("session", "s-run", "running")
	f.observe("session", "s-run", state.HealthRunning, state.DeliveryNotExpected)
	f.register("session", "s-fail", "running")
	f.move("session", "s-fail", "failed", state.RunFailedExitNonzero)
	f.register("play", "p-1", "planned")
	f.register("workflow", "wf-1", "running")
	f.observe("workflow", "wf-1", state.HealthRunning, state.DeliveryPartial, state.RunDeliveryPartial)
	f.register("session", "s-old", "")
	return f
}

func TestScrapeMatchesLiteralExposition(t *testing.T) {
	f := knownStore(t)
	_, reg := newMetrics(t, f.st)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(entitiesBlock+storeBlock),
		"watchdog_entities", "watchdog_entity_states", "watchdog_attention_items", "watchdog_legacy_entities",
		"watchdog_scrape_collector_success"); err != nil {
		t.Error(err)
	}
	build := fmt.Sprintf(`
# HELP watchdog_build_info Always 1; the labels carry the watchdog version and the Go version it was built with.
# TYPE watchdog_build_info gauge
watchdog_build_info{goversion=%q,version="v1.2.3"} 1
`, runtime.Version())
	if err := testutil.GatherAndCompare(reg, strings.NewReader(build), "watchdog_build_info"); err != nil {
		t.Error(err)
	}
	// Reasons: every registered code at every severity, the two held ones at 1.
	mfs := gather(t, reg)
	reasons := mfs["watchdog_reasons_active"]
	if want := len(state.Reasons()) * len(state.Severities); len(reasons.GetMetric()) != want {
		t.Errorf("watchdog_reasons_active has %d series, want %d (pre-seeded)", len(reasons.GetMetric()), want)
	}
	ones := map[string]float64{}
	for _, m := range reasons.GetMetric() {
		if v := m.GetGauge().GetValue(); v != 0 {
			ones[labels(m)] = v
		}
	}
	want := map[string]float64{
		"reason_code=run.failed.exit_nonzero,severity=critical": 1,
		"reason_code=run.delivery.partial,severity=warning":     1,
	}
	if fmt.Sprint(ones) != fmt.Sprint(want) {
		t.Errorf("non-zero reasons: %v, want %v", ones, want)
	}
}

func TestLint(t *testing.T) {
	f := knownStore(t)
	m, reg := newMetrics(t, f.st)
	// Give the caller-updated metrics a series each, so they are linted too.
	m.Transitioned("session", "running", "failed", "orchestrator")
	m.Reaped("session", string(state.SystemReaperPhantomProcessDead))
	m.JobRun("sweep", "ok", 20*time.Millisecond)
	m.SweepFinished(testNow)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// The collector alone, as CollectAndLint sees it.
	problems, err = testutil.CollectAndLint(m.collector)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint (collector): %s: %s", p.Metric, p.Text)
	}
}

// TestEntityCountsMatchStore drives a mixed scenario through the write
// path and checks that watchdog_entities sums to exactly what the store
// holds, type by type and severity by severity.
func TestEntityCountsMatchStore(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 40; i++ {
		id := fmt.Sprintf("s-%02d", i)
		f.register("session", id, "running")
		switch i % 5 {
		case 0:
			f.move("session", id, "completed", "")
		case 1:
			f.move("session", id, "failed", state.RunFailedExitNonzero)
		case 2:
			f.observe("session", id, state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
		case 3:
			f.move("session", id, "timed_out", state.RunTimedOutDeadline)
		}
	}
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("p-%02d", i)
		f.register("play", id, "planned")
		if i%2 == 0 {
			f.move("play", id, "skipped", "")
		}
		f.register("agent", "a-"+id, "idle")
		f.register("team", "t-"+id, "")
	}
	m, reg := newMetrics(t, f.st)
	_ = m
	list, err := f.st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	legacy := 0.0
	for _, e := range list {
		ns := transitions.Normalize(e, unixAt(0))
		if ns.Legacy() {
			legacy++
			continue
		}
		want[fmt.Sprintf("entity_type=%s,severity=%s,tone=%s", e.Type, ns.Severity, ns.Tone)]++
	}
	mfs := gather(t, reg)
	got := map[string]float64{}
	total := 0.0
	for _, m := range mfs["watchdog_entities"].GetMetric() {
		if v := m.GetGauge().GetValue(); v != 0 {
			got[labels(m)] = v
			total += v
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("watchdog_entities:\n got %v\nwant %v", got, want)
	}
	if total+legacy != float64(len(list)) || legacy != 10 {
		t.Errorf("entities %v + legacy %v != %d stored", total, legacy, len(list))
	}
	if v := mfs["watchdog_legacy_entities"].GetMetric()[0].GetGauge().GetValue(); v != legacy {
		t.Errorf("watchdog_legacy_entities = %v, want %v", v, legacy)
	}
	states := 0.0
	for _, m := range mfs["watchdog_entity_states"].GetMetric() {
		states += m.GetGauge().GetValue()
	}
	if states != total {
		t.Errorf("watchdog_entity_states sums to %v, watchdog_entities to %v", states, total)
	}
}

// TestEntityStatesSeriesStay: a combination that empties reports 0
// instead of vanishing.
func TestEntityStatesSeriesStay(t *testing.T) {
	f := newFixture(t)
	f.register("session", "s-1", "running")
	_, reg := newMetrics(t, f.st)
	running := `watchdog_entity_states{delivery="not_expected",entity_type="session",health="unknown",lifecycle="running"}`
	if got := scrapeText(t, reg); !strings.Contains(got, running+" 1") {
		t.Fatalf("first scrape:\n%s", got)
	}
	f.move("session", "s-1", "completed", "")
	got := scrapeText(t, reg)
	if !strings.Contains(got, running+" 0") || !strings.Contains(got, `lifecycle="completed"} 1`) {
		t.Errorf("after the move:\n%s", got)
	}
}

// TestFailingStoreDoesNotFailScrape: with the database closed, the scrape
// succeeds, reports the collector failed and leaves the entity gauges
// out rather than reporting zeros that would read as "all clear".
func TestFailingStoreDoesNotFailScrape(t *testing.T) {
	f := knownStore(t)
	_, reg := newMetrics(t, f.st)
	f.st.Close()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("scrape failed: %v", err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, gone := range []string{"watchdog_entities", "watchdog_entity_states", "watchdog_reasons_active", "watchdog_attention_items", "watchdog_legacy_entities"} {
		if names[gone] {
			t.Errorf("%s reported from a failed store query", gone)
		}
	}
	for _, kept := range []string{"watchdog_build_info", "watchdog_transitions_rejected_total", "go_goroutines", "process_cpu_seconds_total"} {
		if !names[kept] {
			t.Errorf("%s missing from a scrape with a failed store", kept)
		}
	}
	failed := `
# HELP watchdog_scrape_collector_success Whether a scrape-time collector succeeded (1) or its gauges were left out of this scrape (0).
# TYPE watchdog_scrape_collector_success gauge
watchdog_scrape_collector_success{collector="store"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(failed), "watchdog_scrape_collector_success"); err != nil {
		t.Error(err)
	}
}

func TestCallerMetrics(t *testing.T) {
	m, reg := newMetrics(t, newFixture(t).st)
	m.Transitioned("run", "running", "failed", "orchestrator")
	m.Transitioned("session", "running", "failed", "orchestrator")
	m.Transitioned("spaceship", "warp", "failed", "captain") // outside every vocabulary
	m.Rejected("session", "conflict")
	m.Rejected("nope", "because")
	m.Reaped("session", string(state.SystemReaperPhantomProcessDead))
	m.Reaped("session", "made.up.code")
	m.JobRun("sweep", "ok", 30*time.Millisecond)
	m.JobRun("sweep", "skipped", time.Hour) // not observed
	m.JobRun("mystery", "exploded", time.Second)
	m.SweepFinished(testNow)

	want := fmt.Sprintf(`
# HELP watchdog_last_sweep_timestamp_seconds Unix time at which the last sweep finished (0 before the first).
# TYPE watchdog_last_sweep_timestamp_seconds gauge
watchdog_last_sweep_timestamp_seconds %s
`, strconv.FormatFloat(float64(testNow.Unix()), 'g', -1, 64))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "watchdog_last_sweep_timestamp_seconds"); err != nil {
		t.Error(err)
	}
	mfs := gather(t, reg)
	find := func(name, want string) float64 {
		for _, m := range mfs[name].GetMetric() {
			if labels(m) == want {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
		t.Errorf("%s{%s} missing", name, want)
		return -1
	}
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"watchdog_transitions_total", "actor=orchestrator,entity_type=session,from=running,to=failed", 2}, // run is an alias
		{"watchdog_transitions_total", "actor=unknown,entity_type=unknown,from=unknown,to=unknown", 1},
		{"watchdog_transitions_total", "actor=reaper,entity_type=session,from=running,to=aborted", 0}, // pre-seeded
		{"watchdog_reaped_total", "entity_type=session,reason_code=system.reaper.phantom_process_dead", 1},
		{"watchdog_reaped_total", "entity_type=session,reason_code=unknown", 1},
		{"watchdog_reaped_total", "entity_type=team,reason_code=team.health.orphaned", 0}, // pre-seeded
		{"watchdog_reaped_total", "entity_type=play,reason_code=play.blocked.dependency_failed", 0},
	} {
		if v := find(c.name, c.labels); v != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	// Pre-seeded: every edge of every graph by every actor, plus the one
	// series outside the vocabularies.
	edges := 0
	for _, typ := range transitions.Types() {
		g, _ := transitions.Lookup(typ)
		for _, tos := range g.Edges {
			edges += len(tos)
		}
	}
	if n := len(mfs["watchdog_transitions_total"].GetMetric()); n != edges*len(transitions.Actors)+1 {
		t.Errorf("%d transition series, want %d", n, edges*len(transitions.Actors)+1)
	}
	if v := find("watchdog_transitions_rejected_total", "cause=conflict,entity_type=session"); v != 1 {
		t.Errorf("rejected conflict = %v", v)
	}
	if v := find("watchdog_transitions_rejected_total", "cause=unknown,entity_type=unknown"); v != 1 {
		t.Errorf("rejected outside the vocabulary = %v", v)
	}
	// Pre-seeded: every type x cause, every job x result, at 0.
	if n := len(mfs["watchdog_transitions_rejected_total"].GetMetric()); n != (len(transitions.Types())+1)*len(transitions.Causes)+1 {
		t.Errorf("%d rejected series", n)
	}
	if v := find("watchdog_job_runs_total", "job=reap_phantoms,result=timeout"); v != 0 {
		t.Errorf("pre-seeded job series = %v", v)
	}
	if v := find("watchdog_job_runs_total", "job=sweep,result=skipped"); v != 1 {
		t.Errorf("skipped runs = %v", v)
	}
	if v := find("watchdog_job_runs_total", "job=unknown,result=unknown"); v != 1 {
		t.Errorf("unknown job = %v", v)
	}
	if v := find("watchdog_job_duration_seconds", "job=sweep"); v != 1 {
		t.Errorf("sweep durations observed = %v (skipped runs must not be)", v)
	}
}

// TestAttentionGaugeHonoursDismissals: the gauge leaves out what the queue
// hides, and SetFailureWindow moves its horizon.
func TestAttentionGaugeHonoursDismissals(t *testing.T) {
	f := knownStore(t)
	m, reg := newMetricsAt(t, f.st, testNow.Add(2*time.Hour))
	err := f.st.UpsertDismissal(context.Background(), store.Dismissal{
		Fingerprint: "session:s-fail:run.failed.exit_nonzero", EntityType: "session", EntityID: "s-fail",
		ReasonCode: "run.failed.exit_nonzero", StatusAtDismissal: "failed", DismissedAt: unixAt(1), ClearOnStatusChange: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := scrapeText(t, reg); !strings.Contains(got, `watchdog_attention_items{entity_type="session",severity="critical"} 0`) {
		t.Errorf("dismissed item counted:\n%s", grep(got, "attention"))
	}
	m.SetFailureWindow(time.Hour)
	got := scrapeText(t, reg)
	if !strings.Contains(got, `watchdog_attention_items{entity_type="workflow",severity="warning"} 1`) ||
		!strings.Contains(got, `watchdog_reasons_active{reason_code="run.failed.exit_nonzero",severity="critical"} 0`) {
		t.Errorf("with a tiny window the ended failure should leave and the open warning stay:\n%s", grep(got, "attention|exit_nonzero"))
	}
}

func TestNewRefusesDoubleRegistration(t *testing.T) {
	v := live.New(newFixture(t).st, nil, 0)
	reg := prometheus.NewRegistry()
	if _, err := New(reg, v, "v", nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg, v, "v", nil, Options{}); err == nil {
		t.Error("registering twice on one registry should fail")
	}
}

func gather(t testing.TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func labels(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

func scrapeText(t testing.TB, reg prometheus.Gatherer) string {
	t.Helper()
	var b strings.Builder
	for _, mf := range gather(t, reg) {
		for _, m := range mf.GetMetric() {
			fmt.Fprintf(&b, "%s{", mf.GetName())
			for i, l := range m.GetLabel() {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%s=%q", l.GetName(), l.GetValue())
			}
			fmt.Fprintf(&b, "} %v\n", m.GetGauge().GetValue())
		}
	}
	return b.String()
}

func grep(s, pattern string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, p := range strings.Split(pattern, "|") {
			if strings.Contains(line, p) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestUnknownTypeIsCountedNotLost: a row of a type no graph knows (only a
// hand-edited database or a downgrade makes one) shows under
// entity_type="unknown" instead of vanishing from the totals.
func TestUnknownTypeIsCountedNotLost(t *testing.T) {
	f := newFixture(t)
	if _, err := testenv.SQL(t, f.st.Path()).Exec(`INSERT INTO entities (type, id, label, lifecycle, terminal, health, delivery,
		reasons, created_at, updated_at) VALUES ('spaceship', 's-1', '', 'running', 0, 'running', 'not_expected', '[]', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	_, reg := newMetrics(t, f.st)
	total := 0.0
	unknownSeen := false
	for _, m := range gather(t, reg)["watchdog_entities"].GetMetric() {
		total += m.GetGauge().GetValue()
		if strings.Contains(labels(m), "entity_type=unknown") && m.GetGauge().GetValue() == 1 {
			unknownSeen = true
		}
	}
	if total != 1 || !unknownSeen {
		t.Errorf("watchdog_entities sums to %v, unknown type seen %v; want 1 under entity_type=unknown", total, unknownSeen)
	}
}

// TestGaugesSentAgainWhileCountsStay: the collector sends its last
// gauges again while the counts stay the same (ADR-0052) and new ones as
// soon as any count changes; each scrape reads as a fresh collector's
// would.
func TestGaugesSentAgainWhileCountsStay(t *testing.T) {
	f := newFixture(t)
	f.register("session", "s-1", "running")
	_, reg := newMetrics(t, f.st)
	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{"first", func() {}, `watchdog_entities{entity_type="session",severity="neutral",tone="neutral"} 1`},
		{"nothing changed", func() {}, `watchdog_entities{entity_type="session",severity="neutral",tone="neutral"} 1`},
		{"registered", func() { f.register("session", "s-2", "running") }, `watchdog_entities{entity_type="session",severity="neutral",tone="neutral"} 2`},
		{"stalled", func() { f.observe("session", "s-2", state.HealthStalled, "", state.RunHealthStalled) }, `watchdog_reasons_active{reason_code="run.health.stalled",severity="critical"} 1`},
		{"ended", func() { f.move("session", "s-1", "completed", "") }, `watchdog_entities{entity_type="session",severity="neutral",tone="success"} 1`},
		{"nothing changed again", func() {}, `watchdog_entities{entity_type="session",severity="neutral",tone="success"} 1`},
	}
	for _, s := range steps {
		s.change()
		got := stable(scrapeText(t, reg))
		if !strings.Contains(got, s.want+"\n") {
			t.Fatalf("%s: want %s in\n%s", s.name, s.want, got)
		}
		_, fresh := newMetrics(t, f.st)
		if want := stable(scrapeText(t, fresh)); got != want {
			t.Errorf("%s: the scrape differs from a fresh collector's:\n%s\nwant\n%s", s.name, got, want)
		}
	}
}

// stable is an exposition's entity gauges, sorted, but for the states at
// 0: without the lines
// that differ from one scrape or one registry to the next (durations, the
// process's own figures), in an order that does not depend on the order
// the collector sent them in.
func stable(expo string) string {
	var out []string
	for _, l := range strings.Split(expo, "\n") {
		if strings.HasPrefix(l, "watchdog_entity_states") && strings.HasSuffix(l, " 0") {
			continue // a state seen once stays at 0 (TestEntityStatesSeriesStay); a fresh collector never saw it
		}
		if strings.HasPrefix(l, "watchdog_entities") || strings.HasPrefix(l, "watchdog_entity_states") ||
			strings.HasPrefix(l, "watchdog_reasons_active") || strings.HasPrefix(l, "watchdog_attention_items") ||
			strings.HasPrefix(l, "watchdog_legacy_entities") || strings.HasPrefix(l, "watchdog_leftover_processes") {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n") + "\n"
}
