package live

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// groupsOf is every non-empty group of v and its size.
func groupsOf(v *View) map[Group]int {
	out := map[Group]int{}
	v.Groups(func(g Group, n int) { out[g] = n })
	return out
}

// agree fails unless dropped (a view that drops aged-out entities) reads
// as kept (one that keeps them) at now: the counts, the groups the gauges
// read, the counts in the window, the queue, and every entity kept holds,
// from dropped or, when it dropped it, from the store as the API reads
// it (EntryOf).
func agree(t *testing.T, stage string, st *sqlite.Store, kept, dropped *View, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for _, v := range []*View{kept, dropped} {
		if err := v.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if k, d := kept.Counts(now), dropped.Counts(now); fmt.Sprint(k) != fmt.Sprint(d) {
		t.Errorf("%s: counts %+v, the view that keeps %+v", stage, d, k)
	}
	if k, d := groupsOf(kept), groupsOf(dropped); !maps.Equal(k, d) {
		t.Errorf("%s: groups %v, the view that keeps %v", stage, d, k)
	}
	if k, d := kept.ActiveReasons(now), dropped.ActiveReasons(now); !maps.Equal(k, d) {
		t.Errorf("%s: active reasons %v, the view that keeps %v", stage, d, k)
	}
	if k, d := kept.Leftovers(now), dropped.Leftovers(now); !maps.Equal(k, d) {
		t.Errorf("%s: leftovers %v, the view that keeps %v", stage, d, k)
	}
	if k, d := kept.QueueItems(now), dropped.QueueItems(now); !maps.Equal(k, d) {
		t.Errorf("%s: queue items %v, the view that keeps %v", stage, d, k)
	}
	q := attention.Query{Limit: attention.MaxLimit, IncludeDismissed: true}
	if k, d := jsonOf(t, kept.Attention(q, now)), jsonOf(t, dropped.Attention(q, now)); k != d {
		t.Errorf("%s: the queue differs:\n%.600s\n%.600s", stage, d, k)
	}
	var keys []key
	kept.Each("", func(e *Entry) { keys = append(keys, key{e.Entity.Type, e.Entity.ID}) })
	missed := 0
	for _, k := range keys {
		want, _ := kept.Get(k.typ, k.id, now)
		got, ok := dropped.Get(k.typ, k.id, now)
		if !ok {
			missed++
			if dropped.Complete("", true) {
				t.Fatalf("%s: %s/%s is not held, yet the view says it holds every entity", stage, k.typ, k.id)
			}
			e, err := st.Get(ctx, k.typ, k.id)
			if err != nil {
				t.Fatal(err)
			}
			if !want.AgedOut(now, kept.FailureWindow()) || !want.Entity.Terminal {
				t.Errorf("%s: %s/%s dropped, but it has not aged out or is not terminal", stage, k.typ, k.id)
			}
			got = EntryOf(e, now)
		}
		if jsonOf(t, got.Entity) != jsonOf(t, want.Entity) || jsonOf(t, got.Derived) != jsonOf(t, want.Derived) {
			t.Errorf("%s: %s/%s reads\n%s\nthe view that keeps\n%s", stage, k.typ, k.id, jsonOf(t, got), jsonOf(t, want))
		}
		if dropped.EntityItems(k.typ, k.id, now) == nil != (kept.EntityItems(k.typ, k.id, now) == nil) {
			t.Errorf("%s: %s/%s: its items differ", stage, k.typ, k.id)
		}
	}
	if dropped.Len() != kept.Len()-missed {
		t.Fatalf("%s: %d held, want %d (the %d the view that keeps holds, but the %d dropped)", stage, dropped.Len(), kept.Len()-missed, kept.Len(), missed)
	}
}

// TestDroppedAgedOutAgree: a view that drops the entities that aged out
// of the failure window (ADR-0060) holds fewer than one that keeps them,
// yet reads as it does: at its load, after writes to aged-out entities
// that leave them aged out (neither held again nor heard by the hooks:
// nothing re-adds and re-drops) or bring them inside the window again
// (held again), and after a reload's shorter window (dropped at once)
// and longer one (read back from the store).
func TestDroppedAgedOutAgree(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	db := testenv.SQL(t, cli.Path())
	seed(t, db, rand.New(rand.NewPCG(25, 1)), 0, 600)
	now := func() time.Time { return testNow }
	kept, dropped := New(st, now, 0), New(st, now, 0)
	dropped.EvictAgedOut()
	heard := map[string]int{}
	dropped.OnChange(func(prev, cur *store.Entity) { heard[cur.ID]++ })
	for _, v := range []*View{kept, dropped} {
		if err := v.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if dropped.Len() > kept.Len()*3/4 || dropped.Complete("", true) || !dropped.Holds("", true) {
		t.Fatalf("the view that drops holds %d of %d (complete %v)", dropped.Len(), kept.Len(), dropped.Complete("", true))
	}
	agree(t, "loaded", st, kept, dropped, testNow)

	// An aged-out entity and one of each kind the view holds.
	var aged, inside, agedType, insideType string
	kept.Each("", func(e *Entry) {
		if _, ok := dropped.Get(e.Entity.Type, e.Entity.ID, testNow); !ok && aged == "" {
			aged, agedType = e.Entity.ID, e.Entity.Type
		} else if ok && e.Entity.Terminal && inside == "" && e.State.Outcome != "" && e.Entity.Health != state.HealthOrphaned {
			inside, insideType = e.Entity.ID, e.Entity.Type
		}
	})
	if aged == "" || inside == "" {
		t.Fatal("the fixture has no aged-out or no ended entity inside the window")
	}
	clear(heard)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE entities SET label = 'late', health = 'process_dead' WHERE id = ?`, aged)
	agree(t, "a late write to an aged-out entity", st, kept, dropped, testNow)
	if _, ok := dropped.Get(agedType, aged, testNow); ok || heard[aged] != 0 {
		t.Errorf("a write that leaves %s aged out: held %v, heard %d times", aged, ok, heard[aged])
	}
	for range 3 {
		// Again and again: the same count, nothing held.
		exec(`UPDATE entities SET label = label || '.' WHERE id = ?`, aged)
		agree(t, "more late writes", st, kept, dropped, testNow)
	}
	// Back inside the window: held again, its hooks heard.
	exec(`UPDATE entities SET ended_at = ?, lifecycle_at = ? WHERE id = ?`, float64(testNow.Unix()-60), float64(testNow.Unix()-60), aged)
	agree(t, "a write that brings it inside the window", st, kept, dropped, testNow)
	back := false
	dropped.Each("", func(e *Entry) { back = back || e.Entity.ID == aged })
	if !back || heard[aged] != 1 {
		t.Errorf("%s inside the window again: held %v, heard %d times", aged, back, heard[aged])
	}
	// A held one whose end is rewritten to long ago (no graph reopens
	// an end, and the store refuses a lifecycle write beside the write
	// path): dropped at that change, its hooks heard.
	exec(`UPDATE entities SET ended_at = ? WHERE id = ?`, float64(testNow.Unix()-5*86400), inside)
	agree(t, "ended long ago", st, kept, dropped, testNow)
	if heard[inside] != 1 {
		t.Errorf("%s dropped at a change: heard %d times", inside, heard[inside])
	}
	if _, ok := dropped.Get(insideType, inside, testNow); ok {
		t.Errorf("%s ended long ago is still held", inside)
	}

	// A reload: shorter, then longer than the default.
	before := dropped.Len()
	for _, v := range []*View{kept, dropped} {
		v.SetFailureWindow(time.Hour)
	}
	if dropped.Len() >= before {
		t.Errorf("a one-hour window drops nothing: %d held, %d before", dropped.Len(), before)
	}
	agree(t, "a one-hour window", st, kept, dropped, testNow)
	for _, v := range []*View{kept, dropped} {
		v.SetFailureWindow(48 * time.Hour)
	}
	agree(t, "a two-day window", st, kept, dropped, testNow)
	if dropped.Len() <= before {
		t.Errorf("a two-day window reads nothing back: %d held, %d with a day's", dropped.Len(), before)
	}
	// Time moves: at a later now the same agreement (the view's own
	// alarm is not what drops here: its now is the test's).
	later := testNow.Add(30 * time.Hour)
	agree(t, "30 h later, before the view drops", st, kept, dropped, later)
}

// endMany ends n sessions through the write path, their end at the
// writer's now.
func endMany(t testing.TB, w *transitions.Writer, prefix string, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		register(t, w, "session", id, "running")
		if _, err := w.Transition(context.Background(), transitions.Request{Type: "session", ID: id, To: "failed",
			Actor: transitions.ActorOrchestrator, Reason: &state.StateReason{Code: state.RunFailedExitNonzero, Message: "exit 3"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAgeOutByAlarm: the view drops an entity when it ages out, by the
// one alarm armed at the earliest age-out (nothing here syncs the view or
// scans it), and disarms it when nothing is left to age out.
func TestAgeOutByAlarm(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	w := &transitions.Writer{Store: cli, Now: time.Now}
	endMany(t, w, "s", 5)
	register(t, w, "session", "open", "running")
	v := New(st, time.Now, 3*time.Second)
	v.EvictAgedOut()
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// The alarm is at the earliest held end plus the window, rounded up
	// to the step (a quarter of this window): which entity that is
	// depends on how long the writes and the load took, never the check.
	at, armed := v.AgeOutAt()
	var first time.Time
	v.Each("", func(e *Entry) {
		if e.Entity.Terminal && (first.IsZero() || e.Entity.EndedAt.Before(first)) {
			first = e.Entity.EndedAt
		}
	})
	if !first.IsZero() {
		end := first.Add(3*time.Second + time.Microsecond)
		if !armed || at.Before(end) || at.After(end.Add(750*time.Millisecond)) {
			t.Fatalf("the alarm: %v at %v, want armed within a step after %v (the first end and the window)", armed, at, end)
		}
	}
	testenv.Eventually(t, "the ended sessions dropped", 3*time.Minute, func() (bool, string) {
		return v.Len() == 1, fmt.Sprintf("%d held", v.Len())
	})
	if _, armed := v.AgeOutAt(); armed {
		t.Error("the alarm is still armed with nothing left to age out")
	}
	if c := v.Counts(time.Now()); c.Entities != 6 || c.Open != 1 || c.InWindow != 0 {
		t.Errorf("counts %+v: want 6 entities, 1 open, none in the window", c)
	}
}

// agedOutHeap is the heap a view holds for n sessions that failed two
// days before it loads them (one with a finding and its evidence in
// three), kept or dropped.
func agedOutHeap(tb testing.TB, n int, drop bool) uint64 {
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "watchdog.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	db := testenv.SQL(tb, st.Path())
	insertAgedOut(tb, db, n)
	before := heapInuse()
	v := New(st, func() time.Time { return testNow }, 0)
	if drop {
		v.EvictAgedOut()
	}
	if err := v.Load(context.Background()); err != nil {
		tb.Fatal(err)
	}
	after := heapInuse()
	if c := v.Counts(testNow); c.Entities != n {
		tb.Fatalf("the view counts %d entities, inserted %d", c.Entities, n)
	}
	runtime.KeepAlive(v)
	return after - min(after, before)
}

func insertAgedOut(tb testing.TB, db *sql.DB, n int) {
	tb.Helper()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	end := float64(testNow.Unix() - 2*86400)
	for i := range n {
		reasons := "[]"
		if i%3 == 0 {
			reasons = stalledJSON
		}
		if _, err := tx.Exec(`INSERT INTO entities (type, id, label, lifecycle, terminal, health, delivery, host_id, pid,
			reasons, transition_reason, ended_at, lifecycle_at, created_at, updated_at)
			VALUES ('session', ?, ?, 'failed', 1, 'ok', 'not_expected', 'a1b2c3d4e5f60718293a4b5c6d7e8f90', ?, ?, ?, ?, ?, ?, ?)`,
			fmt.Sprintf("job-%06d", i), fmt.Sprintf("nightly job %d", i), 10000+i, reasons, failedJSON, end, end, end-600, end); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkAgedOutMemory reports the heap a view holds for 10,000
// entities that aged out of the failure window, kept (as before
// ADR-0060) and dropped, per entity, and their ratio. Run it with
// -benchtime=1x: the figure is the load's.
func BenchmarkAgedOutMemory(b *testing.B) {
	const n = 10_000
	var kept, dropped uint64
	for i := 0; i < b.N; i++ {
		kept, dropped = agedOutHeap(b, n, false), agedOutHeap(b, n, true)
	}
	b.ReportMetric(float64(kept)/n, "kept-heap-B/entity")
	b.ReportMetric(float64(dropped)/n, "dropped-heap-B/entity")
	b.ReportMetric(float64(kept)/float64(max(dropped, 1)), "kept/dropped")
}

// TestAgedOutMemory: the view that drops 10,000 aged-out entities holds
// a fraction of the heap one that keeps them does (the figures:
// BenchmarkAgedOutMemory).
func TestAgedOutMemory(t *testing.T) {
	const n = 10_000
	kept, dropped := agedOutHeap(t, n, false), agedOutHeap(t, n, true)
	t.Logf("heap for %d aged-out entities: kept %d B (%.0f B each), dropped %d B (%.0f B each): %.1fx", n, kept, float64(kept)/n, dropped, float64(dropped)/n, float64(kept)/float64(max(dropped, 1)))
	if dropped*4 > kept {
		t.Errorf("dropped %d B, kept %d B: want a quarter at most", dropped, kept)
	}
}

// TestLongerWindowNewEntityHeardAsNew: after a reload that lengthens the
// window, the read-back brings back only what the view dropped; an
// entity written since is still heard by the hooks as new (no previous
// state), so its first severity is logged and pushed as a new one.
func TestLongerWindowNewEntityHeardAsNew(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	w := &transitions.Writer{Store: cli, Now: time.Now}
	endMany(t, w, "old", 3)
	// The view's clock is two days on: the three ended sessions aged out.
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	v := New(st, later, 24*time.Hour)
	v.EvictAgedOut()
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if v.Len() != 0 {
		t.Fatalf("%d held, want the 3 aged-out sessions dropped", v.Len())
	}
	type heard struct {
		id      string
		prevNil bool
	}
	var got []heard
	v.OnChange(func(prev, cur *store.Entity) { got = append(got, heard{cur.ID, prev == nil}) })
	v.SetFailureWindow(72 * time.Hour)
	register(t, w, "session", "brand-new", "running")
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if v.Len() != 4 {
		t.Errorf("%d held after the longer window, want the 3 read back and the new one", v.Len())
	}
	if len(got) != 1 || got[0] != (heard{"brand-new", true}) {
		t.Errorf("the hooks heard %+v, want only brand-new, as new", got)
	}
}
