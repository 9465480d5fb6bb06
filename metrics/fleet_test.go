package metrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// registerOn registers an entity recorded on host ("" = host-less).
func (f *fixture) registerOn(host, typ, id, lifecycle string) {
	f.t.Helper()
	reg := transitions.Registration{Entity: store.Entity{Type: typ, ID: id, HostID: host, Lifecycle: &lifecycle}, Actor: transitions.ActorOrchestrator}
	if _, err := f.w.Register(context.Background(), reg); err != nil {
		f.t.Fatal(err)
	}
}

// fleetStore is one store two hosts and the host-less work share: on h1 a
// failed and a running session; on h2 a failed session and a partially
// delivered workflow; host-less, a failed session and a legacy one.
func fleetStore(t *testing.T) *fixture {
	f := newFixture(t)
	f.registerOn("h1", "session", "s1-fail", "running")
	f.move("session", "s1-fail", "failed", state.RunFailedExitNonzero)
	f.registerOn("h1", "session", "s1-run", "running")
	f.observe("session", "s1-run", state.HealthRunning, state.DeliveryNotExpected)
	f.registerOn("h2", "session", "s2-fail", "running")
	f.move("session", "s2-fail", "failed", state.RunFailedExitNonzero)
	f.registerOn("h2", "workflow", "wf-2", "running")
	f.observe("workflow", "wf-2", state.HealthRunning, state.DeliveryPartial, state.RunDeliveryPartial)
	f.registerOn("", "session", "s0-fail", "running")
	f.move("session", "s0-fail", "failed", state.RunFailedExitNonzero)
	f.register("session", "s0-old", "")
	return f
}

// owner is the daemon's ownership rule: its host, plus the host-less
// entities while it leads.
func owner(host string, leader bool) Options {
	return Options{
		Owns:   func(h string) bool { return h == host || (h == "" && leader) },
		Leader: func() bool { return leader },
	}
}

// entityGauges scrapes reg and returns every entity gauge series (the
// ones Options.Owns scopes) by name and labels.
func entityGauges(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for name, mf := range gather(t, reg) {
		switch name {
		case "watchdog_entities", "watchdog_entity_states", "watchdog_reasons_active", "watchdog_attention_items", "watchdog_legacy_entities",
			"watchdog_leftover_processes":
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

func scrapeAs(t *testing.T, st *sqlite.Store, o Options) (map[string]float64, prometheus.Gatherer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	clock := func() time.Time { return testNow }
	m, err := New(reg, live.New(st, clock, 0), "v", clock, o)
	if err != nil {
		t.Fatal(err)
	}
	return entityGauges(t, m.Gatherer(reg)), m.Gatherer(reg)
}

// TestGaugesCountWhatTheDaemonOwns: each daemon of a fleet reads the
// whole store but counts its own host's entities, and the host-less ones
// only while it leads.
func TestGaugesCountWhatTheDaemonOwns(t *testing.T) {
	f := fleetStore(t)
	const (
		crit    = "watchdog_attention_items{entity_type=session,severity=critical}"
		warn    = "watchdog_attention_items{entity_type=workflow,severity=warning}"
		failed  = "watchdog_entities{entity_type=session,severity=critical,tone=danger}"
		running = "watchdog_entities{entity_type=session,severity=info,tone=info}"
		exit    = "watchdog_reasons_active{reason_code=run.failed.exit_nonzero,severity=critical}"
		legacy  = "watchdog_legacy_entities{}"
	)
	tests := []struct {
		name string
		o    Options
		want map[string]float64
	}{
		{"alone on its store (no Owns)", Options{}, map[string]float64{crit: 3, warn: 1, failed: 3, running: 1, exit: 3, legacy: 1}},
		{"h1, not leading", owner("h1", false), map[string]float64{crit: 1, warn: 0, failed: 1, running: 1, exit: 1, legacy: 0}},
		{"h1, leading", owner("h1", true), map[string]float64{crit: 2, warn: 0, failed: 2, running: 1, exit: 2, legacy: 1}},
		{"h2, not leading", owner("h2", false), map[string]float64{crit: 1, warn: 1, failed: 1, running: 0, exit: 1, legacy: 0}},
		{"a host with nothing, not leading", owner("h3", false), map[string]float64{crit: 0, warn: 0, failed: 0, running: 0, exit: 0, legacy: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := scrapeAs(t, f.st, tt.o)
			for k, want := range tt.want {
				v, ok := got[k]
				if !ok {
					t.Errorf("%s missing: a pre-seeded series must stay at 0", k)
				} else if v != want {
					t.Errorf("%s = %v, want %v", k, v, want)
				}
			}
		})
	}
}

// TestFleetSumIsTheWholeStore: summed across the daemons of a fleet (one
// of them leading), every entity gauge series equals what a daemon alone
// on the store counts: no entity is counted twice or lost.
func TestFleetSumIsTheWholeStore(t *testing.T) {
	f := fleetStore(t)
	whole, _ := scrapeAs(t, f.st, Options{})
	for _, leader := range []string{"h1", "h2"} {
		sum := map[string]float64{}
		for _, h := range []string{"h1", "h2"} {
			got, _ := scrapeAs(t, f.st, owner(h, h == leader))
			for k, v := range got {
				sum[k] += v
			}
		}
		var diff []string
		for k, v := range whole {
			if sum[k] != v {
				diff = append(diff, k)
			}
		}
		for k := range sum {
			if _, ok := whole[k]; !ok {
				diff = append(diff, k+" (only in the fleet's sum)")
			}
		}
		sort.Strings(diff)
		if len(diff) > 0 {
			t.Errorf("%s leading: the fleet's sum differs from the whole store in %d series: %s", leader, len(diff), strings.Join(diff, "; "))
		}
		if whole["watchdog_attention_items{entity_type=session,severity=critical}"] != 3 {
			t.Fatalf("the fixture lost its items: %v", whole)
		}
	}
}

func TestLeaderGauge(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name   string
		leader func() bool
		want   float64
	}{
		{"alone on its store (no Leader)", nil, 1},
		{"leading", func() bool { return true }, 1},
		{"following", func() bool { return false }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, reg := scrapeAs(t, f.st, Options{Leader: tt.leader})
			mf := gather(t, reg)["watchdog_leader"]
			if mf == nil || len(mf.GetMetric()) != 1 {
				t.Fatalf("watchdog_leader: %v", mf)
			}
			if v := mf.GetMetric()[0].GetGauge().GetValue(); v != tt.want {
				t.Errorf("watchdog_leader = %v, want %v", v, tt.want)
			}
		})
	}
}

// TestCountersCountWhatTheViewHolds: the counters follow the view's feed,
// which reads the audit rows of the hosts the view holds (each row carries
// its entity's host), so each daemon of a fleet counts the transitions of
// what it owns and the fleet's daemons sum to what a lone daemon counts.
func TestCountersCountWhatTheViewHolds(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	clock := func() time.Time { return testNow }
	type daemon struct {
		name  string
		hosts *store.Hosts // nil: a lone daemon's view, every host
		want  float64
		reg   prometheus.Gatherer
		view  *live.View
	}
	h1, h2, rest := store.Only("h1"), store.Only("h2"), store.AllBut("h1", "h2")
	ds := []*daemon{{name: "lone", want: 4}, {name: "h1", hosts: &h1, want: 1}, {name: "h2", hosts: &h2, want: 2}, {name: "the leader's share", hosts: &rest, want: 1}}
	for _, d := range ds {
		reg := prometheus.NewRegistry()
		d.view = live.New(f.st, clock, 0)
		if d.hosts != nil {
			sel := *d.hosts
			d.view.SetHosts(func() store.Hosts { return sel })
		}
		m, err := New(reg, d.view, "v", clock, Options{})
		if err != nil {
			t.Fatal(err)
		}
		d.reg = m.Gatherer(reg)
		m.Follow(d.view)
		if err := d.view.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, host := range []string{"h1", "h2", "h2", ""} {
		id := fmt.Sprintf("s%d", i)
		f.registerOn(host, "session", id, "running")
		f.move("session", id, "failed", state.RunFailedExitNonzero)
	}
	const series = "actor=orchestrator,entity_type=session,from=running,to=failed"
	var sum float64
	for _, d := range ds {
		if err := d.view.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, m := range gather(t, d.reg)["watchdog_transitions_total"].GetMetric() {
			if labels(m) == series {
				got = m.GetCounter().GetValue()
			}
		}
		if got != d.want {
			t.Errorf("%s: watchdog_transitions_total{%s} = %v, want %v", d.name, series, got, d.want)
		}
		if d.hosts != nil {
			sum += got
		}
	}
	if sum != ds[0].want {
		t.Errorf("the fleet's daemons count %v transitions, the lone daemon %v", sum, ds[0].want)
	}
}
