package live

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// stored is t as the store gives it back: Unix seconds to the
// microsecond, in the local zone.
func stored(t time.Time) time.Time { return unixtime.FromSeconds(unixtime.Seconds(t)) }

// TestRecordRebuilds holds the view's compact record to the entity it was
// made of, field for field, and its Entry to what Derive gives: every
// reader's output is the same as when the view kept the entity whole.
func TestRecordRebuilds(t *testing.T) {
	running, completed := "running", "completed"
	at := stored(testNow.Add(-time.Hour))
	stalled := state.StateReason{Code: "run.health.stalled", Message: "no heartbeat", ClaimStatus: "observed", Confidence: 1,
		Evidence: []state.EvidenceRef{{Kind: state.EvidenceToolResult, Path: "/run/hb", Detail: "not modified"}}}
	ended := state.StateReason{Code: "run.lifecycle.failed", Message: "exit 1"}
	base := func() store.Entity {
		return store.Entity{Type: "session", ID: "s-1", Label: "reviewer", Lifecycle: &running, LastSeq: 7,
			Health: state.HealthRunning, Delivery: state.Delivery("expected"), HostID: "h1", BootID: "b1", PID: 4242,
			PIDStartTime: at, PIDStartTicks: 123, HeartbeatFile: "/run/hb", HeartbeatAt: at.Add(time.Minute),
			StartedAt: at, LifecycleAt: at, CreatedAt: at, UpdatedAt: at.Add(2 * time.Minute), Revision: 9,
			Metadata: json.RawMessage("{}")}
	}
	tests := []struct {
		name string
		edit func(*store.Entity)
		rare bool
	}{
		{"common fields only", func(*store.Entity) {}, false},
		{"metadata nil", func(e *store.Entity) { e.Metadata = nil }, false},
		{"metadata of its own", func(e *store.Entity) { e.Metadata = json.RawMessage(`{"repo":"x"}`) }, true},
		{"a finding", func(e *store.Entity) {
			e.Health, e.HealthSince, e.Reasons = state.HealthStalled, at.Add(time.Minute), []state.StateReason{stalled}
		}, false},
		{"findings with every evidence field, their times, none and empty", func(e *store.Entity) {
			full := state.EvidenceRef{Kind: "file", ID: "i", SessionID: "s", MessageID: "m", ToolCallID: "t", ArtifactID: "a",
				Path: "/p", URL: "u", Repo: "r", CommitSHA: "c", ContentHash: "h", Detail: "since 12:00", FetchedAt: unixtime.Of(at),
				Times: []state.EvidenceTime{{Text: "12:00", At: unixtime.Of(at)}}}
			e.Reasons = []state.StateReason{
				{Code: "run.health.stalled", Message: "m", ClaimStatus: "observed", Confidence: 0.5, EntityType: "session", EntityID: "s-1",
					Since: unixtime.Of(at), FirstSeen: unixtime.Of(at.Add(time.Second)), Evidence: []state.EvidenceRef{full, {Kind: "k", Times: []state.EvidenceTime{}}}},
				{Code: "run.health.liveness_unknown", Evidence: []state.EvidenceRef{}},
				{Code: "run.health.process_dead"},
			}
		}, false},
		{"no findings, an empty list", func(e *store.Entity) { e.Reasons = []state.StateReason{} }, false},
		{"a finding's time in another zone: kept whole", func(e *store.Entity) {
			e.Reasons = []state.StateReason{{Code: "run.health.stalled", FirstSeen: unixtime.Of(at.UTC())}}
		}, true},
		{"an evidence time finer than the store keeps: kept whole", func(e *store.Entity) {
			e.Reasons = []state.StateReason{{Code: "run.health.stalled", Evidence: []state.EvidenceRef{{Kind: "k", FetchedAt: unixtime.Of(testNow.Add(time.Nanosecond))}}}}
		}, true},
		{"legacy", func(e *store.Entity) { e.Lifecycle = nil }, false},
		{"ended with a reason and an exit", func(e *store.Entity) {
			e.Lifecycle, e.Terminal, e.EndedAt, e.TransitionReason = &completed, true, at.Add(3*time.Minute), &ended
			e.Exit = &state.ExitStatus{Code: 1, At: at.Add(3 * time.Minute)}
			e.DeadSince = at.Add(3 * time.Minute)
		}, true},
		{"every rare field", func(e *store.Entity) {
			e.SupervisorPID, e.SupervisorStartTime, e.HeartbeatProgress = 1, at, "step 3"
			e.Timeout, e.TimeoutElapsed = time.Hour, time.Minute
			e.ArtifactsRoot, e.Artifacts, e.LockFiles = "/srv", []state.ArtifactSpec{{Path: "out.md", Required: true}}, []string{"/srv/lock"}
			e.ParentType, e.ParentID, e.DependsOn = "workflow", "w-1", []string{"job/j-1"}
			e.ScheduleCron, e.ScheduleLastFiredAt = "* * * * *", at
		}, true},
		{"a time finer than the store keeps", func(e *store.Entity) { e.UpdatedAt = testNow.Add(time.Nanosecond) }, true},
		{"a time in another zone", func(e *store.Entity) { e.StartedAt = at.UTC() }, true},
		{"a health and a delivery none of the known ones", func(e *store.Entity) {
			e.Health, e.Delivery = state.Health("hand_edited"), state.Delivery("newer_word")
		}, false},
		{"no health or delivery recorded", func(e *store.Entity) { e.Health, e.Delivery = "", "" }, false},
		{"a pid past 32 bits: kept whole", func(e *store.Entity) { e.PID = 1 << 40 }, true},
		{"a negative pid", func(e *store.Entity) { e.PID = -5 }, false},
		{"ended, no lifecycle time: arrived when updated", func(e *store.Entity) {
			e.Lifecycle, e.Terminal, e.LifecycleAt = &completed, true, time.Time{}
		}, false},
	}
	words := newInterner()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base()
			tt.edit(&e)
			compact := newRecord(&e, testNow, &words)
			if (compact.body.rare != nil) != tt.rare {
				t.Errorf("rare fields kept: %v, want %v", compact.body.rare != nil, tt.rare)
			}
			for _, r := range []*record{compact} {
				if got := r.entity(); !reflect.DeepEqual(got, e) {
					t.Errorf("rebuilt entity differs:\n got %+v\nwant %+v", got, e)
				}
				now := testNow.Add(time.Minute)
				want := Derive(e, testNow)
				want.State.EvaluatedAt.Time = now
				for i := range want.Items {
					want.Items[i] = want.Items[i].Bare()
				}
				got := r.entry(now)
				if !reflect.DeepEqual(got.Derived, want) {
					t.Errorf("rebuilt derived state differs:\n got %+v\nwant %+v", got.Derived, want)
				}
				if got.Legacy() != (e.Lifecycle == nil) || got.Open() != (e.Lifecycle != nil && !e.Terminal) {
					t.Errorf("Legacy %v, Open %v of %+v", got.Legacy(), got.Open(), e)
				}
				if a := attention.Arrived(e.EndedAt, e.LifecycleAt, e.UpdatedAt); !r.arrival().Equal(a) {
					t.Errorf("arrival %v, want %v", r.arrival(), a)
				}
				if ref := got.Ref().Entity(); !reflect.DeepEqual(ref, e) {
					t.Errorf("Ref's entity differs:\n got %+v\nwant %+v", ref, e)
				}
			}
		})
	}
}

// TestPlaceOdd: a health, delivery, severity or tone none of the known
// ones is kept as it is, not lost.
func TestPlaceOdd(t *testing.T) {
	r := &record{sev: place(state.Severities, state.Severity("bogus")), tone: place(state.Tones, state.Tone("odd")),
		health: place(state.Healths, state.Health("h")), delivery: place(state.Deliveries, state.Delivery("d")),
		odd: &oddWords{severity: "bogus", tone: "odd", health: "h", delivery: "d"}}
	if r.severity() != "bogus" || r.toneOf() != "odd" || r.healthOf() != "h" || r.deliveryOf() != "d" {
		t.Errorf("severity %q tone %q health %q delivery %q", r.severity(), r.toneOf(), r.healthOf(), r.deliveryOf())
	}
	for i, h := range state.Healths {
		if p := place(state.Healths, h); int(p) != i || (&record{health: p}).healthOf() != h {
			t.Errorf("place(%s) = %d", h, p)
		}
	}
	for i, s := range state.Severities {
		if p := place(state.Severities, s); int(p) != i {
			t.Errorf("place(%s) = %d", s, p)
		}
	}
}

// TestHooksGetTheirOwnCopy: each hook hears a change in a copy of its own
// (one it may keep: the view holds none), and the view's entities, read
// whole (Get, Entity), are the store's.
func TestHooksGetTheirOwnCopy(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	register(t, w, "agent", "kept", "idle")
	register(t, w, "agent", "other", "idle")

	v := New(st, clock.Now, 0)
	got := map[string]*store.Entity{}
	v.OnChange(func(_, cur *store.Entity) { got[cur.ID] = cur })
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"kept", "other"} {
		want, err := cli.Get(ctx, "agent", id)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := v.Get("agent", id, testNow)
		if !ok || !reflect.DeepEqual(e.Entity, want) {
			t.Errorf("%s: the view's entity differs from the store's:\n got %+v\nwant %+v", id, e.Entity, want)
		}
		if whole, ok := v.Entity("agent", id); !ok || !reflect.DeepEqual(whole, want) {
			t.Errorf("%s: View.Entity differs from the store's:\n got %+v\nwant %+v", id, whole, want)
		}
		if h := got[id]; h == nil || !reflect.DeepEqual(*h, want) {
			t.Errorf("%s: the hook's copy differs from the store's: %+v", id, h)
		}
	}
}
