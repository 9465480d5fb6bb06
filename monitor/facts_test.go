package monitor

import (
	"math"
	"reflect"
	"testing"
	"time"
	"unique"
	"unsafe"

	"watchdog/state"
	"watchdog/store"
)

// TestTrackedSize holds the monitor's per-entity struct to its size
// class: a field added, or a small one moved from beside the others,
// costs every open entity a class (16 bytes here; ADR-0052). What few
// entities have is behind tracked.rare.
func TestTrackedSize(t *testing.T) {
	if got := unsafe.Sizeof(tracked{}); got > 144 {
		t.Errorf("tracked is %d bytes, past the 144 size class", got)
	}
}

// TestFactsGiveBack: the facts (with rare) give back every field they
// keep exactly as handed in, the health from its place and the pid from
// 32 bits as the timing rules need them; the host id and boot id, kept
// as a flag and an interned handle, come back as the entity's, for a
// monitor with a host id of its own and for one without.
func TestFactsGiveBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		typ, id    string
		health     state.Health
		pid        int
		wantHealth state.Health
		wantPID    int
	}{
		{"common", "session", "s-1", state.HealthRunning, 4242, state.HealthRunning, 4242},
		{"an id with slashes", "session", "a/b/c", state.HealthIdle, 1, state.HealthIdle, 1},
		{"an empty id", "job", "", state.HealthLost, 0, state.HealthLost, 0},
		{"every health's last", "schedule", "x", state.Healths[len(state.Healths)-1], 0, state.Healths[len(state.Healths)-1], 0},
		{"no health", "session", "s", "", 0, otherHealth, 0},
		{"a health none of the known ones", "session", "s", "hand_edited", 0, otherHealth, 0},
		{"a pid past 32 bits", "session", "s", state.HealthRunning, 1 << 40, state.HealthRunning, math.MaxInt32},
		{"a negative pid", "session", "s", state.HealthRunning, -7, state.HealthRunning, -7},
	} {
		e := store.Entity{Type: tc.typ, ID: tc.id, Health: tc.health, PID: tc.pid}
		var tr tracked
		tr.setFacts(&e, "h1")
		got := tr.entity("h1")
		if got.Type != tc.typ || got.ID != tc.id || got.Health != tc.wantHealth || got.PID != tc.wantPID {
			t.Errorf("%s: got %q %q %q %d, want %q %q %q %d", tc.name, got.Type, got.ID, got.Health, got.PID, tc.typ, tc.id, tc.wantHealth, tc.wantPID)
		}
		for _, h := range []state.Health{state.HealthIdle, state.HealthStalled, state.HealthProcessDead, state.HealthOrphaned} {
			if (got.Health == h) != (tc.health == h) {
				t.Errorf("%s: reads as %s: %v, handed in %s", tc.name, h, got.Health == h, tc.health)
			}
		}
	}

	// Every field the facts keep, each nil, empty and set, and the host
	// and boot ids each way: the entity given back is the one handed in
	// as far as the facts go (factsPart), field for field.
	full := func() store.Entity {
		return store.Entity{Type: "schedule", ID: "nightly", Lifecycle: strp("enabled"), Terminal: true, LastSeq: 9,
			Health: state.HealthRunning, DeadSince: t0.Add(time.Minute), HostID: "h1", BootID: "b1", PID: 42,
			PIDStartTime: t0, PIDStartTicks: 1000, HeartbeatFile: "/run/hb", HeartbeatAt: t0.Add(2 * time.Minute),
			ScheduleCron: "0 3 * * *", ScheduleLastFiredAt: t0.Add(3 * time.Minute), StartedAt: t0.Add(4 * time.Minute),
			LifecycleAt: t0.Add(5 * time.Minute), CreatedAt: t0.Add(-time.Hour), Exit: &state.ExitStatus{Code: 3, At: t0}}
	}
	// plain drops from e whatever rare keeps of an entity (the host id
	// aside: that is rare only for a monitor with none of its own).
	plain := func(e *store.Entity) {
		e.HeartbeatFile, e.ScheduleCron, e.ScheduleLastFiredAt, e.Exit, e.DeadSince = "", "", time.Time{}, nil, time.Time{}
	}
	for _, tc := range []struct {
		name     string
		host     string // the monitor's
		set      func(*store.Entity)
		wantRare bool
	}{
		{"every field set", "h1", func(*store.Entity) {}, true},
		{"every field empty", "h1", func(e *store.Entity) { *e = store.Entity{} }, false},
		{"as the bench registers: nothing rare", "h1", plain, false},
		{"no host id", "h1", func(e *store.Entity) { plain(e); e.HostID = "" }, false},
		{"no host id, a monitor with none", "", func(e *store.Entity) { plain(e); e.HostID = "" }, false},
		{"another host's, a monitor with none", "", func(e *store.Entity) { plain(e); e.HostID = "h9" }, true},
		{"no boot id", "h1", func(e *store.Entity) { e.BootID = "" }, true},
		{"no type", "h1", func(e *store.Entity) { plain(e); e.Type = "" }, false},
		{"no type, no boot id", "h1", func(e *store.Entity) { plain(e); e.Type, e.BootID = "", "" }, false},
		{"a heartbeat file alone", "h1", func(e *store.Entity) { f := e.HeartbeatFile; plain(e); e.HeartbeatFile = f }, true},
		{"a schedule alone", "h1", func(e *store.Entity) { c := e.ScheduleCron; plain(e); e.ScheduleCron = c }, true},
		{"a last fire alone", "h1", func(e *store.Entity) { l := e.ScheduleLastFiredAt; plain(e); e.ScheduleLastFiredAt = l }, true},
		{"an exit alone", "h1", func(e *store.Entity) { x := e.Exit; plain(e); e.Exit = x }, true},
		{"an empty exit", "h1", func(e *store.Entity) { plain(e); e.Exit = &state.ExitStatus{} }, true},
		{"a dead_since alone", "h1", func(e *store.Entity) { d := e.DeadSince; plain(e); e.DeadSince = d }, true},
		{"no lifecycle", "h1", func(e *store.Entity) { e.Lifecycle = nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := full()
			tc.set(&e)
			var tr tracked
			tr.setFacts(&e, tc.host)
			if got, want := tr.entity(tc.host), factsPart(&e); !reflect.DeepEqual(got, want) {
				t.Errorf("given back\n%+v\nwant\n%+v", got, want)
			}
			if got := tr.entity(tc.host); got.Exit != e.Exit {
				t.Errorf("exit %p, want the entity's own %p", got.Exit, e.Exit)
			}
			if (tr.rare != nil) != tc.wantRare {
				t.Errorf("rare %+v, want one: %v", tr.rare, tc.wantRare)
			}
			// The next change without anything rare drops it; the
			// monitor's own (a fired deadline, a death's pids) keeps it,
			// and the entity given back is still the one handed in.
			p := full()
			plain(&p)
			p.HostID = tc.host
			tr.setFacts(&p, tc.host)
			if tr.rare != nil {
				t.Errorf("rare %+v kept with nothing rare left", tr.rare)
			}
			if got, want := tr.entity(tc.host), factsPart(&p); !reflect.DeepEqual(got, want) {
				t.Errorf("after a plain change, given back\n%+v\nwant\n%+v", got, want)
			}
			for _, own := range []struct {
				name string
				set  func(*rare)
			}{
				{"a fired deadline", func(r *rare) { r.enforcedFor = stampOf(t0) }},
				{"a died pid", func(r *rare) { r.diedPID = 42 }},
				{"an exit's pid", func(r *rare) { r.exitPID = 42 }},
			} {
				tr.rare = nil
				own.set(tr.w())
				want := *tr.rare
				tr.setFacts(&e, tc.host)
				tr.setFacts(&p, tc.host)
				if tr.rare == nil || *tr.rare != want {
					t.Errorf("rare %+v: %s lost", tr.rare, own.name)
				}
				if got, want := tr.entity(tc.host), factsPart(&p); !reflect.DeepEqual(got, want) {
					t.Errorf("with %s, given back\n%+v\nwant\n%+v", own.name, got, want)
				}
			}
		})
	}

	// One type and boot id, one copy: two entities' facts share it,
	// and one of another boot or type does not read theirs.
	a, b := full(), full()
	b.BootID = string([]byte("b1")) // a copy of its own, as another decode's
	b.Type = string([]byte("schedule"))
	var ta, tb tracked
	ta.setFacts(&a, "h1")
	tb.setFacts(&b, "h1")
	if ta.f.tb != tb.f.tb || unsafe.StringData(ta.entity("h1").BootID) != unsafe.StringData(tb.entity("h1").BootID) ||
		unsafe.StringData(ta.entity("h1").Type) != unsafe.StringData(tb.entity("h1").Type) {
		t.Errorf("two entities of one type and boot keep two copies of them")
	}
	for _, c := range []struct{ typ, boot string }{{"schedule", "b2"}, {"session", "b1"}, {"", "b1"}, {"schedule", ""}, {"", ""}} {
		e := full()
		e.Type, e.BootID = c.typ, c.boot
		tb.setFacts(&e, "h1")
		if got := tb.entity("h1"); got.Type != c.typ || got.BootID != c.boot {
			t.Errorf("handed in %q %q after %q %q, given back %q %q", c.typ, c.boot, a.Type, a.BootID, got.Type, got.BootID)
		}
	}
}

// factsPart is e as far as the facts go: the fields tracked.entity gives
// back, every other empty; a health none of state.Healths as the timing
// rules read it (otherHealth, held by the cases above).
func factsPart(e *store.Entity) store.Entity {
	h := e.Health
	if placeOf(h) == odd {
		h = otherHealth
	}
	return store.Entity{Type: e.Type, ID: e.ID, Lifecycle: e.Lifecycle, Terminal: e.Terminal, LastSeq: e.LastSeq,
		Health: h, DeadSince: e.DeadSince, HostID: e.HostID, BootID: e.BootID, PID: e.PID,
		PIDStartTime: e.PIDStartTime, PIDStartTicks: e.PIDStartTicks, HeartbeatFile: e.HeartbeatFile,
		HeartbeatAt: e.HeartbeatAt, ScheduleCron: e.ScheduleCron, ScheduleLastFiredAt: e.ScheduleLastFiredAt,
		StartedAt: e.StartedAt, LifecycleAt: e.LifecycleAt, CreatedAt: e.CreatedAt, Exit: e.Exit}
}

// TestKeyIsTheEntitysOwn: the monitor's map is keyed by the id handed
// in, no key string of its own, and a change in strings of its own (the
// view's next record) moves the key and the facts to its id, so no older
// copy of the id is kept beside the view's.
func TestKeyIsTheEntitysOwn(t *testing.T) {
	h := newHarness(t, Settings{})
	first := session(string([]byte("s-1")), 0)
	h.update(first)
	h.step()
	next := first
	next.ID, next.Type = string([]byte("s-1")), string([]byte("session"))
	next.HeartbeatAt = t0.Add(time.Minute)
	h.update(next)
	h.step()
	if h.m.ents.len() != 1 {
		t.Fatalf("%d tracked, want 1", h.m.ents.len())
	}
	// (That the map's key is the newest string too is entmap's test.)
	for tr := range h.m.ents.all() {
		for _, s := range []string{tr.f.id} {
			if unsafe.StringData(s) != unsafe.StringData(next.ID) {
				t.Errorf("id %q kept in an older copy, not the one last handed in", s)
			}
		}
		// The type is no string of the entity's: the one copy the
		// type's entities share (typeBootOf, TestFactsGiveBack).
		if s := tr.f.typ(); s != next.Type {
			t.Errorf("type %q, want %q", s, next.Type)
		}
	}
}

// TestByName: a death's watch key finds its entity, whichever "/" splits
// it, and nothing else.
func TestByName(t *testing.T) {
	m := New(Options{Reaper: &recorder{}})
	for _, k := range []key{{"session", "s"}, {"a/b", "c"}, {"job", ""}} {
		m.ents.put(k, &tracked{f: facts{tb: typeBootOf(unique.Handle[typeBoot]{}, k.typ, ""), id: k.id}})
	}
	for _, tc := range []struct {
		name string
		want *key
	}{
		{"session/s", &key{"session", "s"}},
		{"a/b/c", &key{"a/b", "c"}},
		{"job/", &key{"job", ""}},
		{"session/t", nil},
		{"session", nil},
		{"", nil},
	} {
		tr := m.byName(tc.name)
		switch {
		case tc.want == nil && tr != nil:
			t.Errorf("%q found %+v, want none", tc.name, tr.key())
		case tc.want != nil && (tr == nil || tr.key() != *tc.want):
			t.Errorf("%q found %v, want %+v", tc.name, tr, *tc.want)
		}
	}
}
