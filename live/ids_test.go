package live

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// TestOneCopyOfEachID: the view keeps one copy of an entity's id for as
// long as it holds the entity (ids.go): a change hands the record, the
// hooks and the reasons about the entity the copy the view already had;
// new entities' ids are laid end to end; and every id reads as written.
func TestOneCopyOfEachID(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	long := strings.Repeat("x", idMax+1)
	ids := []string{"t1", "t2", "t3", long}
	for _, id := range ids {
		register(t, w, "agent", id, "idle")
	}
	v := New(st, clock.Now, 0)
	var heard []*store.Entity
	v.OnChange(func(_, cur *store.Entity) { heard = append(heard, cur) })
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	data := func(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }
	held := map[string]uintptr{}
	for _, id := range ids {
		r := v.entries.Get("agent", id)
		if r == nil || r.id != id {
			t.Fatalf("%s: held as %v", id, r)
		}
		held[id] = data(r.id)
	}
	// t1…t3 were new together: packed one after another in one chunk.
	if held["t2"] != held["t1"]+2 || held["t3"] != held["t2"]+2 {
		t.Errorf("new ids not laid end to end: t1 %#x, t2 %#x, t3 %#x", held["t1"], held["t2"], held["t3"])
	}

	// An item holds the same copy: a failed session's.
	register(t, w, "session", "s1", "running")
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "s1", To: "failed", Actor: transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
		t.Fatal(err)
	}
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	items := v.EntityItems("session", "s1", clock.Now())
	if len(items) == 0 {
		t.Fatal("the failed session has no item")
	}
	if r := v.entries.Get("session", "s1"); data(items[0].Entity.ID) != data(r.id) {
		t.Error("the item holds another copy of the id than the record")
	}

	// A change of each: the same copy, in the record and for the hooks.
	heard = nil
	for _, id := range ids {
		move(t, w, id, "idle", "busy")
	}
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(heard) != len(ids) {
		t.Fatalf("hooks heard %d changes, want %d", len(heard), len(ids))
	}
	for _, cur := range heard {
		r := v.entries.Get("agent", cur.ID)
		if got := data(r.id); got != held[cur.ID] {
			t.Errorf("%s: a change made a new copy (%#x, was %#x)", cur.ID, got, held[cur.ID])
		}
		if data(cur.ID) != held[cur.ID] {
			t.Errorf("%s: the hooks got another copy", cur.ID)
		}
		e, ok := v.Get("agent", cur.ID, clock.Now())
		if !ok || e.Entity.ID != cur.ID || *e.Entity.Lifecycle != "busy" {
			t.Errorf("%s: Get gives %+v, %v", cur.ID, e.Entity, ok)
		}
	}
}

// TestIDArena: ids are copied exactly, chunk after chunk; the empty and
// the long ones are kept as they are.
func TestIDArena(t *testing.T) {
	var a idArena
	var got []string
	for i := 0; i < 3*idChunk/4; i++ {
		got = append(got, a.clone(fmt.Sprintf("id-%d", i)))
	}
	for i, s := range got {
		if want := fmt.Sprintf("id-%d", i); s != want {
			t.Fatalf("id %d reads %q, want %q", i, s, want)
		}
	}
	long := strings.Repeat("y", idMax+1)
	if c := a.clone(long); unsafe.StringData(c) != unsafe.StringData(long) {
		t.Error("a long id was packed")
	}
	if a.clone("") != "" {
		t.Error("the empty id")
	}
}
