package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"watchdog/live"
	"watchdog/state"
)

// TestCountersAfterAKeptScrape: the counters' families are kept between
// scrapes (counters.go), and every way a counter moves shows in the next
// scrape: the write path's and the reaper's calls, the jobs', and a
// transition another writer committed, which the feed brings.
func TestCountersAfterAKeptScrape(t *testing.T) {
	type series struct{ family, labels string }
	tests := []struct {
		name string
		move func(m *Metrics, f *fixture)
		want series
		// feed: the counters follow the view's feed (Follow), as in the
		// daemon; Transitioned and Reaped then count nothing themselves.
		feed bool
	}{
		{"a transition", func(m *Metrics, _ *fixture) { m.Transitioned("session", "running", "failed", "orchestrator") },
			series{"watchdog_transitions_total", "actor=orchestrator,entity_type=session,from=running,to=failed"}, false},
		{"a rejection", func(m *Metrics, _ *fixture) { m.Rejected("session", "conflict") },
			series{"watchdog_transitions_rejected_total", "cause=conflict,entity_type=session"}, false},
		{"a reap", func(m *Metrics, _ *fixture) {
			m.Reaped("session", string(state.SystemReaperPhantomProcessDead))
		}, series{"watchdog_reaped_total", "entity_type=session,reason_code=" + string(state.SystemReaperPhantomProcessDead)}, false},
		{"a job run", func(m *Metrics, _ *fixture) { m.JobRun("sweep", "ok", 20*time.Millisecond) },
			series{"watchdog_job_runs_total", "job=sweep,result=ok"}, false},
		{"a skipped job run", func(m *Metrics, _ *fixture) { m.JobRun("sweep", "skipped", 0) },
			series{"watchdog_job_runs_total", "job=sweep,result=skipped"}, false},
		{"another writer's transition, through the feed", func(_ *Metrics, f *fixture) {
			f.move("session", "s", "failed", state.RunFailedExitNonzero)
		}, series{"watchdog_transitions_total", "actor=orchestrator,entity_type=session,from=running,to=failed"}, true},
	}
	value := func(t *testing.T, g prometheus.Gatherer, s series) float64 {
		t.Helper()
		for _, m := range gather(t, g)[s.family].GetMetric() {
			if labels(m) == s.labels {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
			}
		}
		t.Fatalf("no series %s{%s}", s.family, s.labels)
		return 0
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.register("session", "s", "running")
			reg := prometheus.NewRegistry()
			clock := func() time.Time { return testNow }
			view := live.New(f.st, clock, 0)
			m, err := New(reg, view, "v", clock, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.feed {
				m.Follow(view)
			}
			if err := view.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			g := m.Gatherer(reg)
			before := value(t, g, tt.want)
			if again := value(t, g, tt.want); again != before {
				t.Fatalf("a scrape with nothing moved reads %v, the one before %v", again, before)
			}
			// Kept: a scrape with nothing moved serves the same family.
			if a, b := gather(t, g)[tt.want.family], gather(t, g)[tt.want.family]; a != b {
				t.Errorf("%s gathered anew with nothing moved", tt.want.family)
			}
			tt.move(m, f)
			if got := value(t, g, tt.want); got != before+1 {
				t.Errorf("after %s: %s{%s} = %v, want %v", tt.name, tt.want.family, tt.want.labels, got, before+1)
			}
		})
	}
}

// TestGathererMergesInOrder: /metrics is one list sorted by name with no
// family twice, the counters among the rest, as one registry gave it; and
// the counters' names stay taken on the caller's registry.
func TestGathererMergesInOrder(t *testing.T) {
	f := knownStore(t)
	m, g := newMetrics(t, f.st)
	m.JobRun("sweep", "ok", time.Millisecond)
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, mf := range mfs {
		if seen[mf.GetName()] {
			t.Errorf("%s gathered twice", mf.GetName())
		}
		seen[mf.GetName()] = true
		if i > 0 && mfs[i-1].GetName() >= mf.GetName() {
			t.Errorf("%s after %s: not sorted by name", mf.GetName(), mfs[i-1].GetName())
		}
	}
	for _, name := range []string{"watchdog_transitions_total", "watchdog_transitions_rejected_total", "watchdog_reaped_total",
		"watchdog_job_runs_total", "watchdog_job_duration_seconds", "watchdog_entities", "go_goroutines"} {
		if !seen[name] {
			t.Errorf("%s not gathered", name)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := New(reg, live.New(f.st, nil, 0), "v", nil, Options{}); err != nil {
		t.Fatal(err)
	}
	dup := prometheus.NewCounter(prometheus.CounterOpts{Name: "watchdog_transitions_total", Help: "Lifecycle transitions applied through the write path, by entity type, edge and actor."})
	if err := reg.Register(dup); err == nil {
		t.Error("a second watchdog_transitions_total was registered beside New's")
	}
}
