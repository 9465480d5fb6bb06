package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// leftoverFinding is a run.health.leftover_processes finding naming pids
// as judge writes it (one evidence line each, ID pid:<pid>:<ticks>), with
// an evidence line of another kind beside them, which names no process.
func leftoverFinding(pids ...int) state.StateReason {
	ev := []state.EvidenceRef{{Kind: "proc", Detail: "root gone"}}
	for _, p := range pids {
		ev = append(ev, state.EvidenceRef{Kind: "process", ID: fmt.Sprintf("pid:%d:%d", p, 1000+p), Detail: fmt.Sprintf("pid %d node", p)})
	}
	return state.Observed(state.RunHealthLeftoverProcesses, "pid 42 is gone; descendants still running", ev...)
}

// record stores reasons as the entity's findings, the sweep's write.
func (f *fixture) record(typ, id string, h state.Health, reasons ...state.StateReason) {
	f.t.Helper()
	ctx := context.Background()
	cur, err := f.st.Get(ctx, typ, id)
	if err != nil {
		f.t.Fatal(err)
	}
	now := float64(testNow.Unix())
	if _, err := f.st.RecordObservation(ctx, typ, id, store.Observation{Health: h, Delivery: state.DeliveryNotExpected, Reasons: reasons,
		HealthSince: unixAt(now), SeenSeq: cur.LastSeq, At: unixAt(now)}); err != nil {
		f.t.Fatal(err)
	}
}

// TestLeftoverProcessesGauge: watchdog_leftover_processes counts the
// processes the leftover findings name, by entity type, open entities and
// ended ones (inside the failure window) alike, pre-seeded at 0 for every type, and drops them when
// the next look no longer sees them.
func TestLeftoverProcessesGauge(t *testing.T) {
	f := newFixture(t)
	f.register("session", "s-open", "running")
	f.register("session", "s-other", "running")
	f.register("invocation", "i-ended", "running")
	f.move("invocation", "i-ended", "failed", state.RunFailedExitNonzero)
	_, reg := newMetrics(t, f.st)

	for _, step := range []struct {
		name string
		do   func()
		want map[string]float64 // entity_type → value; every other type 0
	}{
		{"none yet: every type at 0", func() {}, nil},
		{"an open entity's dead root left three", func() {
			f.record("session", "s-open", state.HealthProcessDead,
				state.Observed(state.RunHealthProcessDead, "pid 42 is gone", state.EvidenceRef{Kind: "process", ID: "pid:42:7"}),
				leftoverFinding(100, 101, 102))
		}, map[string]float64{"session": 3}},
		{"an ended entity's two count too, under its type", func() {
			f.record("invocation", "i-ended", state.HealthProcessDead, leftoverFinding(200, 201))
		}, map[string]float64{"session": 3, "invocation": 2}},
		// Failure case: other findings name processes too (a dead root's
		// pid); they are not leftovers.
		{"another finding's process is not a leftover", func() {
			f.record("session", "s-other", state.HealthProcessDead,
				state.Observed(state.RunHealthProcessDead, "pid 43 is gone", state.EvidenceRef{Kind: "process", ID: "pid:43:7"}))
		}, map[string]float64{"session": 3, "invocation": 2}},
		{"the next look sees one of the three gone", func() {
			f.record("session", "s-open", state.HealthProcessDead, leftoverFinding(100, 102))
		}, map[string]float64{"session": 2, "invocation": 2}},
		{"and then none: the series stays, at 0", func() {
			f.record("session", "s-open", state.HealthProcessDead)
			f.record("invocation", "i-ended", state.HealthProcessDead)
		}, nil},
	} {
		step.do()
		got := map[string]float64{}
		for _, m := range gather(t, reg)["watchdog_leftover_processes"].GetMetric() {
			typ := strings.TrimPrefix(labels(m), "entity_type=")
			got[typ] = m.GetGauge().GetValue()
		}
		for _, typ := range transitions.Types() {
			if got[typ] != step.want[typ] {
				t.Errorf("%s: watchdog_leftover_processes{entity_type=%q} = %v, want %v (all: %v)", step.name, typ, got[typ], step.want[typ], got)
			}
		}
		if len(got) != len(transitions.Types()) {
			t.Errorf("%s: %d series, want one per type (%d): %v", step.name, len(got), len(transitions.Types()), got)
		}
	}
}

// TestLeftoverProcessesWindow: an ended entity's leftovers count while it
// is inside the failure window, the entities the sweep still looks at,
// as watchdog_reasons_active counts its codes; an open entity's always.
func TestLeftoverProcessesWindow(t *testing.T) {
	f := newFixture(t)
	f.register("session", "s-open", "running")
	f.record("session", "s-open", state.HealthProcessDead, leftoverFinding(1, 2))
	f.register("invocation", "i-ended", "running")
	f.move("invocation", "i-ended", "failed", state.RunFailedExitNonzero)
	f.record("invocation", "i-ended", state.HealthProcessDead, leftoverFinding(3))
	m, reg := newMetricsAt(t, f.st, testNow.Add(2*time.Hour))
	for _, tc := range []struct {
		name       string
		window     time.Duration
		invocation float64
	}{
		{"inside the window", 24 * time.Hour, 1},
		{"past it", time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m.SetFailureWindow(tc.window)
			got := scrapeText(t, reg)
			for _, want := range []string{
				`watchdog_leftover_processes{entity_type="session"} 2`,
				fmt.Sprintf(`watchdog_leftover_processes{entity_type="invocation"} %v`, tc.invocation),
			} {
				if !strings.Contains(got, want) {
					t.Errorf("no %s in\n%s", want, grep(got, "leftover"))
				}
			}
		})
	}
}

// TestLeftoverProcessesOwned: in a fleet, each daemon counts the leftovers
// of its own host's entities, and the host-less ones while it leads, as
// every owned gauge does.
func TestLeftoverProcessesOwned(t *testing.T) {
	f := newFixture(t)
	f.registerOn("h1", "session", "s1", "running")
	f.record("session", "s1", state.HealthProcessDead, leftoverFinding(1, 2, 3))
	f.registerOn("", "session", "s0", "running")
	f.record("session", "s0", state.HealthProcessDead, leftoverFinding(4))
	const left = "watchdog_leftover_processes{entity_type=session}"
	for _, tt := range []struct {
		name string
		o    Options
		want float64
	}{
		{"alone on its store", Options{}, 4},
		{"h1, not leading", owner("h1", false), 3},
		{"h1, leading", owner("h1", true), 4},
		{"h2, not leading: none of its own, still the series", owner("h2", false), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := scrapeAs(t, f.st, tt.o)
			if v, ok := got[left]; !ok || v != tt.want {
				t.Errorf("%s = %v (present %v), want %v", left, v, ok, tt.want)
			}
		})
	}
}
