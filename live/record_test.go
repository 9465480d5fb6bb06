package live

import (
	"context"
	"encoding/json"
	"math"
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
		{"the bench's finding: fetched when first seen, no moment", func(e *store.Entity) {
			e.Health, e.Reasons = state.HealthUnknown, []state.StateReason{{Code: "run.health.liveness_unknown",
				Message: "liveness could not be decided: no pid recorded yet", ClaimStatus: "observed", Confidence: 1,
				Evidence:  []state.EvidenceRef{{Kind: state.EvidenceToolResult, Detail: "no pid recorded yet", FetchedAt: unixtime.Of(at)}},
				FirstSeen: unixtime.Of(at)}}
		}, false},
		{"times that equal and differ: since, first seen, fetched", func(e *store.Entity) {
			one := func(since, first, fetched time.Time) state.StateReason {
				return state.StateReason{Code: "run.health.stalled", Message: "m", Since: unixtime.Of(since), FirstSeen: unixtime.Of(first),
					Evidence: []state.EvidenceRef{{Kind: "k", Detail: "d", FetchedAt: unixtime.Of(fetched)}}}
			}
			var zero time.Time
			s, f, x := at, at.Add(time.Second), at.Add(2*time.Second)
			e.Reasons = []state.StateReason{one(s, f, f), one(s, f, x), one(s, f, s), one(zero, f, x), one(s, zero, x), one(s, zero, s),
				one(zero, zero, x), one(zero, zero, zero), one(s, s, s), one(s, s, zero), one(zero, f, zero), one(s, f, zero)}
		}, false},
		{"several pieces of evidence, each its own time, one with more", func(e *store.Entity) {
			e.Reasons = []state.StateReason{{Code: "run.health.stale_lock", Message: "m", FirstSeen: unixtime.Of(at),
				Evidence: []state.EvidenceRef{{Kind: "file", Path: "/a.lock", Detail: "held", FetchedAt: unixtime.Of(at)},
					{Kind: "file", Detail: "held too"}, {Kind: "k", FetchedAt: unixtime.Of(at.Add(time.Second))}}}}
		}, false},
		{"one piece of evidence with more, and a moment", func(e *store.Entity) {
			e.Reasons = []state.StateReason{{Code: "run.health.stalled", Message: "no heartbeat since 12:00", ClaimStatus: "observed",
				Since: unixtime.Of(at), FirstSeen: unixtime.Of(at.Add(time.Minute)), Evidence: []state.EvidenceRef{{Kind: "tool_result",
					Path: "/run/hb", Detail: "not modified", FetchedAt: unixtime.Of(at.Add(time.Minute)),
					Times: []state.EvidenceTime{{Text: "12:00", At: unixtime.Of(at)}}}}}}
		}, false},
		{"reasons about itself and about other entities", func(e *store.Entity) {
			e.Reasons = []state.StateReason{
				{Code: "run.health.orphaned", EntityType: "session", EntityID: "s-1"},
				{Code: "run.health.orphaned", EntityType: "workflow", EntityID: "w-9"},
				{Code: "run.health.orphaned", EntityType: "session", EntityID: "s-10"},
				{Code: "run.health.orphaned", EntityID: "s-1"},
			}
		}, false},
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
		{"a transition reason, findings nil", func(e *store.Entity) {
			e.TransitionReason, e.Reasons = &state.StateReason{Code: "run.lifecycle.failed", Message: "exit 1", ClaimStatus: "reported",
				EntityType: "session", EntityID: "s-1", Evidence: []state.EvidenceRef{}}, nil
		}, false},
		{"a transition reason, findings an empty list", func(e *store.Entity) {
			e.TransitionReason, e.Reasons = &ended, []state.StateReason{}
		}, false},
		{"a transition reason about another entity, and findings", func(e *store.Entity) {
			e.TransitionReason = &state.StateReason{Code: "run.lifecycle.cancelled", Message: "parent ended", EntityType: "workflow", EntityID: "w-1",
				Since: unixtime.Of(at), Evidence: []state.EvidenceRef{{Kind: "k", FetchedAt: unixtime.Of(at)}, {Kind: "j", Path: "/x"}}}
			e.Health, e.HealthSince, e.Reasons = state.HealthStalled, at.Add(time.Minute), []state.StateReason{stalled, {Code: "run.health.leftover_processes",
				Evidence: []state.EvidenceRef{{Kind: "process", ID: "pid:7:9"}}}}
		}, false},
		{"a transition reason, findings whose times do not fit: kept whole", func(e *store.Entity) {
			e.TransitionReason = &ended
			e.Reasons = []state.StateReason{{Code: "run.health.stalled", FirstSeen: unixtime.Of(at.UTC())}}
		}, true},
		{"a transition reason whose time does not fit: kept whole", func(e *store.Entity) {
			e.TransitionReason = &state.StateReason{Code: "run.lifecycle.failed", Since: unixtime.Of(testNow.Add(time.Nanosecond))}
		}, true},
		{"no label, no heartbeat file", func(e *store.Entity) { e.Label, e.HeartbeatFile = "", "" }, false},
		{"a heartbeat file, no label", func(e *store.Entity) { e.Label = "" }, false},
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base()
			tt.edit(&e)
			compact := newRecord(&e, testNow)
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

// TestReasonShapes: the same finding of two entities shares one shape and
// needs no tail (its times are its own), the same finding about each
// entity itself too (its entity id is given back from the record's), and
// a confidence comes back bit for bit (-0 and NaN, which == on a float
// would merge or never match).
func TestReasonShapes(t *testing.T) {
	at := stored(testNow)
	finding := func(id string, seen time.Time, confidence float64) state.StateReason {
		return state.StateReason{Code: "run.health.liveness_unknown", Message: "liveness could not be decided", ClaimStatus: "observed",
			Confidence: confidence, EntityType: "session", EntityID: id, FirstSeen: unixtime.Of(seen),
			Evidence: []state.EvidenceRef{{Kind: "tool_result", Detail: "no pid recorded yet", FetchedAt: unixtime.Of(seen)}}}
	}
	a, b := finding("s-1", at, 1), finding("s-2", at.Add(time.Hour), 1)
	ra, rb := reasonOf(&a, "s-1"), reasonOf(&b, "s-2")
	if ra.shape != rb.shape {
		t.Errorf("the same finding of two entities has two shapes: %+v, %+v", ra.shape.Value(), rb.shape.Value())
	}
	if ra.tail != nil || rb.tail != nil {
		t.Errorf("the common finding has a tail: %+v, %+v", ra.tail, rb.tail)
	}
	if got := rb.reason("s-2"); !reflect.DeepEqual(got, b) {
		t.Errorf("rebuilt %+v, want %+v", got, b)
	}
	if other := reasonOf(&a, "s-3"); other.shape == ra.shape || other.reason("s-3").EntityID != "s-1" {
		t.Errorf("a reason about another entity shares the shape of one about itself, or lost its id")
	}
	for _, c := range []float64{math.Copysign(0, -1), math.NaN(), 0, 0.25} {
		r := finding("s-1", at, c)
		if got := reasonOf(&r, "s-1"); math.Float64bits(got.reason("s-1").Confidence) != math.Float64bits(c) {
			t.Errorf("confidence %v came back %v", c, got.reason("s-1").Confidence)
		}
	}
}

// TestLeftoversCounted: the leftover finding's processes are counted from
// its evidence however the record keeps it (one piece, several, the
// findings whole), and never from the transition reason's.
func TestLeftoversCounted(t *testing.T) {
	running := "running"
	pid := func(id string) state.EvidenceRef { return state.EvidenceRef{Kind: "process", ID: id, Detail: "alive"} }
	leftover := func(ev ...state.EvidenceRef) state.StateReason {
		return state.StateReason{Code: state.RunHealthLeftoverProcesses, Message: "left over", Evidence: ev}
	}
	for _, tt := range []struct {
		name string
		edit func(*store.Entity)
		want int
	}{
		{"none", func(*store.Entity) {}, 0},
		{"one piece", func(e *store.Entity) { e.Reasons = []state.StateReason{leftover(pid("pid:1:2"))} }, 1},
		{"several pieces, one not a process", func(e *store.Entity) {
			e.Reasons = []state.StateReason{leftover(pid("pid:1:2"), pid("pid:3:4"), pid("other"))}
		}, 2},
		{"the transition's evidence is not counted", func(e *store.Entity) {
			tr := leftover(pid("pid:5:6"))
			e.TransitionReason, e.Reasons = &tr, []state.StateReason{leftover(pid("pid:1:2"))}
		}, 1},
		{"past the detail, counted in one line", func(e *store.Entity) {
			r := leftover(pid("pid:1:2"), pid("pid:3:4"), pid("more:19998"), pid("more:x"))
			r.FirstSeen = unixtime.Of(testNow.UTC())
			e.Reasons = []state.StateReason{r}
		}, 20000},
		{"past the detail, in pieces (times to the microsecond)", func(e *store.Entity) {
			e.Reasons = []state.StateReason{leftover(pid("pid:1:2"), pid("pid:3:4"), pid("more:19998"))}
		}, 20000},
		{"the findings whole", func(e *store.Entity) {
			r := leftover(pid("pid:1:2"), pid("pid:3:4"))
			r.FirstSeen = unixtime.Of(testNow.UTC())
			e.Reasons = []state.StateReason{r}
		}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := store.Entity{Type: "session", ID: "s-1", Lifecycle: &running, Health: state.HealthRunning}
			tt.edit(&e)
			if got := newRecord(&e, testNow).leftovers(); got != tt.want {
				t.Errorf("leftovers %d, want %d", got, tt.want)
			}
		})
	}
}
