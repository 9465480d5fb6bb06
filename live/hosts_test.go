package live

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// TestCountsKeepTheHost: two hosts' entities and a host-less one in one
// view. The groups, the active reasons and the queue's counts carry each
// entity's host, so a daemon of a fleet can count what it owns; the
// counts STATUS= and the queue read stay the whole view's.
func TestCountsKeepTheHost(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	for _, e := range []struct{ host, id string }{{"h1", "a"}, {"h1", "b"}, {"h2", "c"}, {"", "d"}} {
		running := "running"
		if _, err := w.Register(ctx, transitions.Registration{
			Entity: store.Entity{Type: "session", ID: e.id, HostID: e.host, Lifecycle: &running}, Actor: transitions.ActorOrchestrator,
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: e.id, To: "failed", Actor: transitions.ActorOrchestrator,
			Reason: &state.StateReason{Code: state.RunFailedExitNonzero}}); err != nil {
			t.Fatal(err)
		}
	}
	v := New(st, clock.Now, 0)
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	now := clock.Now()

	tests := []struct {
		host                   string
		groups, reasons, items int
	}{
		{"h1", 2, 2, 2},
		{"h2", 1, 1, 1},
		{"", 1, 1, 1},
		{"h3", 0, 0, 0},
	}
	groups := map[string]int{}
	v.Groups(func(g Group, n int) { groups[g.Host] += n })
	reasons := map[string]int{}
	for k, n := range v.ActiveReasons(now) {
		if k.Code == state.RunFailedExitNonzero && k.Severity == state.SeverityCritical {
			reasons[k.Host] += n
		}
	}
	items := map[string]int{}
	for k, n := range v.QueueItems(now) {
		if k.Type != "session" || k.Severity != state.SeverityCritical {
			t.Errorf("queue kind %+v: want critical session items only", k)
		}
		items[k.Host] += n
	}
	for _, tt := range tests {
		if groups[tt.host] != tt.groups || reasons[tt.host] != tt.reasons || items[tt.host] != tt.items {
			t.Errorf("host %q: %d entities, %d reasons, %d items; want %d, %d, %d", tt.host,
				groups[tt.host], reasons[tt.host], items[tt.host], tt.groups, tt.reasons, tt.items)
		}
	}
	if c := v.Counts(now); c.Queue != 4 || c.QueueBySeverity[state.SeverityCritical] != 4 || c.Entities != 4 {
		t.Errorf("the whole view's counts: %+v, want every host's 4 entities and items", c)
	}
	if q := v.Attention(attentionQuery(), now); q.Total != 4 {
		t.Errorf("the queue shows %d items, want every host's 4", q.Total)
	}
}

// TestViewHoldsItsHosts: a view with a selection of hosts holds those
// hosts' entities only, from its load on and as the feed brings more; when
// the selection moves it reads the hosts it gains and drops those it
// loses, its counts and queue with them (ADR-0056).
func TestViewHoldsItsHosts(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	reg := func(host, id string) {
		t.Helper()
		lc := "running"
		if _, err := w.Register(ctx, transitions.Registration{
			Entity: store.Entity{Type: "session", ID: id, Lifecycle: &lc, HostID: host}, Actor: transitions.ActorOrchestrator,
		}); err != nil {
			t.Fatal(err)
		}
	}
	reg("a", "a-1")
	reg("b", "b-1")
	reg("", "hostless-1")

	var sel atomic.Pointer[store.Hosts]
	set := func(h store.Hosts) { sel.Store(&h) }
	set(store.Only("a"))
	v := New(st, clock.Now, 0)
	v.SetHosts(func() store.Hosts { return *sel.Load() })
	// The hooks hear changes of what the view holds, not the load of a
	// host it gains.
	var heard []string
	v.OnChange(func(_, cur *store.Entity) { heard = append(heard, cur.ID) })
	held := func() []string {
		var ids []string
		v.Each("", func(e *Entry) { ids = append(ids, e.Entity.ID) })
		slices.Sort(ids)
		return ids
	}
	for _, step := range []struct {
		name  string
		do    func()
		want  []string
		holds map[string]bool // host (or "*": all) → Holds
		heard []string        // what OnChange hears at the step's Sync
	}{
		{"load", func() {}, []string{"a-1"}, map[string]bool{"a": true, "b": false, "": false, "*": false}, []string{"a-1"}},
		{"a write of its host and one of another", func() { reg("a", "a-2"); reg("b", "b-2") }, []string{"a-1", "a-2"}, nil, []string{"a-2"}},
		{"leads: all but b", func() { set(store.AllBut("b")) }, []string{"a-1", "a-2", "hostless-1"}, map[string]bool{"a": true, "": true, "b": false, "c": true, "*": false}, nil},
		{"a write of a host no daemon runs", func() { reg("c", "c-1") }, []string{"a-1", "a-2", "c-1", "hostless-1"}, nil, []string{"c-1"}},
		{"b falls silent: everything", func() { set(store.AllHosts()) }, []string{"a-1", "a-2", "b-1", "b-2", "c-1", "hostless-1"}, map[string]bool{"*": true}, nil},
		{"no longer leads", func() { set(store.Only("a")) }, []string{"a-1", "a-2"}, map[string]bool{"a": true, "b": false, "*": false}, nil},
	} {
		heard = nil
		step.do()
		if err := v.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := held(); !slices.Equal(got, step.want) {
			t.Errorf("%s: the view holds %v, want %v", step.name, got, step.want)
		}
		if c := v.Counts(clock.Now()); c.Open != len(step.want) {
			t.Errorf("%s: %d open counted, want %d", step.name, c.Open, len(step.want))
		}
		for h, want := range step.holds {
			if got := v.Holds(h, h == "*"); got != want {
				t.Errorf("%s: Holds(%q) %v, want %v", step.name, h, got, want)
			}
		}
	}
}

// TestOwnViewAgreesWithTheStoresAnswer: one host's entities as its own
// daemon's view holds them and as another daemon reads them from the
// store (For, which that daemon's view does not hold) are the same
// entries, the same queue and the same counts: one Derive over the same
// rows (ADR-0056).
func TestOwnViewAgreesWithTheStoresAnswer(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	db := testenv.SQL(t, cli.Path())
	r := rand.New(rand.NewPCG(27, 1))
	seed(t, db, r, 0, 600)
	if _, err := db.Exec("UPDATE entities SET host_id = 'h' || (rowid % 3)"); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return testNow }
	view := func(host string) *View {
		v := New(st, now, 0)
		v.SetHosts(func() store.Hosts { return store.Only(host) })
		if err := v.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return v
	}
	own, other := view("h1"), view("h0")
	read, err := other.For(ctx, "h1", false)
	if err != nil {
		t.Fatal(err)
	}
	if read == other || read == own {
		t.Fatal("For answered from a view, not from the store")
	}
	entries := func(v *View) []string {
		var out []string
		v.Each("", func(e *Entry) {
			b, _ := json.Marshal(struct {
				E store.Entity
				D Derived
			}{e.Entity, e.Derived})
			out = append(out, string(b))
		})
		slices.Sort(out)
		return out
	}
	mine, theirs := entries(own), entries(read)
	if len(mine) < 150 || !slices.Equal(mine, theirs) {
		t.Errorf("h1's entries: own view %d, the store's answer %d, or they differ", len(mine), len(theirs))
	}
	q := attention.Query{Limit: attention.MaxLimit, Host: "h1", IncludeDismissed: true}
	a, b := own.Attention(q, testNow), read.Attention(q, testNow)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if a.Total == 0 || string(ja) != string(jb) {
		t.Errorf("h1's queue: own view %d items, the store's answer %d, or they differ", a.Total, b.Total)
	}
	if ca, cb := own.Counts(testNow), read.Counts(testNow); fmt.Sprint(ca) != fmt.Sprint(cb) {
		t.Errorf("h1's counts: own view %+v, the store's answer %+v", ca, cb)
	}
}

// wakeRecorder is a store that narrows its wake-ups (a HostWaker, as the
// PostgreSQL store is): it records the selection it was told and the one
// in force at each DataVersion.
type wakeRecorder struct {
	*sqlite.Store
	told      *store.Hosts
	atVersion []string
}

func (w *wakeRecorder) WakeFor(h store.Hosts) { w.told = &h }

func (w *wakeRecorder) DataVersion(ctx context.Context) (int64, error) {
	w.atVersion = append(w.atVersion, fmt.Sprintf("%+v", w.told))
	return w.Store.DataVersion(ctx)
}

// TestViewTellsTheStoreItsHosts: a view with a selection tells a
// HostWaker its selection before each Sync reads the version, so a commit
// of a host it has just gained wakes it; a view without one tells nothing
// (its store wakes for every host).
func TestViewTellsTheStoreItsHosts(t *testing.T) {
	st, _ := twoStores(t)
	ctx := context.Background()
	w := &wakeRecorder{Store: st}
	sel := store.Only("a")
	v := New(w, nil, 0)
	v.SetHosts(func() store.Hosts { return sel })
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	sel = store.AllBut("b")
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%+v", &store.Hosts{List: []string{"a"}}), fmt.Sprintf("%+v", &store.Hosts{All: true, List: []string{"b"}})}
	if !slices.Equal(w.atVersion, want) {
		t.Errorf("the selection in force at each version read: %v, want %v", w.atVersion, want)
	}

	lone := &wakeRecorder{Store: st}
	if err := New(lone, nil, 0).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if lone.told != nil {
		t.Errorf("a view without a selection told its store %+v", *lone.told)
	}
}
