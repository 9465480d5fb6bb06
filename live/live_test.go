package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
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

var testNow = time.Date(2026, 5, 24, 12, 0, 0, 0, time.UTC)

// TestMain gives the drivers the view's derivation, as the daemon and the
// CLI do before they open a store: the tests' writes leave fresh columns.
func TestMain(m *testing.M) {
	store.SetDerivation(Columns)
	os.Exit(m.Run())
}

// twoStores opens one database file twice: the daemon's store, which the
// view reads, and a second writer standing for `watchdog ... --db` in
// another process.
func twoStores(t testing.TB) (daemon, cli *sqlite.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "watchdog.db")
	ctx := context.Background()
	daemon, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Close() })
	cli, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return daemon, cli
}

func register(t testing.TB, w *transitions.Writer, typ, id, lifecycle string) {
	t.Helper()
	if _, err := w.Register(context.Background(), transitions.Registration{
		Entity: store.Entity{Type: typ, ID: id, Lifecycle: &lifecycle}, Actor: transitions.ActorOrchestrator,
	}); err != nil {
		t.Fatal(err)
	}
}

// move moves an agent between idle and busy.
func move(t testing.TB, w *transitions.Writer, id, from, to string) {
	t.Helper()
	if _, err := w.Transition(context.Background(), agentMove(id, from, to)); err != nil {
		t.Fatal(err)
	}
}

func agentMove(id, from, to string) transitions.Request {
	trigger := "prompt_received"
	if to == "idle" {
		trigger = "result_received"
	}
	return transitions.Request{Type: "agent", ID: id, To: to, ExpectFrom: from, Actor: transitions.ActorOrchestrator, Trigger: trigger}
}

// TestSyncReadsAnotherWriter: a write through a second store on the same
// file reaches the view at the next Sync, and OnChange hears each change
// once with the entity before and after.
func TestSyncReadsAnotherWriter(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	register(t, w, "agent", "before", "idle")

	v := New(st, clock.Now, 0)
	type change struct{ prev, cur string }
	var changes []change
	lifecycle := func(e *store.Entity) string {
		if e == nil {
			return "<none>"
		}
		return e.ID + ":" + e.LifecycleOr("")
	}
	v.OnChange(func(prev, cur *store.Entity) { changes = append(changes, change{lifecycle(prev), lifecycle(cur)}) })
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Get("agent", "before", testNow); !ok || v.Len() != 1 {
		t.Fatalf("Load: entity registered before it is missing (len %d)", v.Len())
	}

	register(t, w, "agent", "a1", "idle")
	if _, ok := v.Get("agent", "a1", testNow); ok {
		t.Fatal("the view changed without a Sync")
	}
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	move(t, w, "a1", "idle", "busy")
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := v.Sync(ctx); err != nil { // nothing new: no hook
		t.Fatal(err)
	}
	got, ok := v.Get("agent", "a1", testNow)
	if !ok || got.Entity.LifecycleOr("") != "busy" {
		t.Fatalf("after Sync: %+v, %v", got.Entity, ok)
	}
	want := []change{{"<none>", "before:idle"}, {"<none>", "a1:idle"}, {"a1:idle", "a1:busy"}}
	if !slices.Equal(changes, want) {
		t.Errorf("OnChange heard %v, want %v", changes, want)
	}
}

// TestOnTransitionsDeliversEachRowOnce: the audit rows written after Load
// reach the hook once each, in seq order, however the Syncs fall; the
// history before Load never does.
func TestOnTransitionsDeliversEachRowOnce(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	w := &transitions.Writer{Store: cli}
	register(t, w, "agent", "old", "idle")
	move(t, w, "old", "idle", "busy")

	v := New(st, nil, 0)
	var seqs []int64
	var edges []string
	v.OnTransitions(func(rows []store.AuditRow) {
		for _, r := range rows {
			seqs = append(seqs, r.Seq)
			from := "<none>"
			if r.From != nil {
				from = *r.From
			}
			edges = append(edges, r.EntityID+":"+from+">"+r.To)
		}
	})
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 0 {
		t.Fatalf("Load delivered the history: %v", edges)
	}
	register(t, w, "agent", "new", "idle")
	for i := 0; i < 3; i++ {
		from, to := "idle", "busy"
		if i%2 == 1 {
			from, to = to, from
		}
		move(t, w, "new", from, to)
		if i != 1 { // two writes between one pair of Syncs
			if err := v.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"new:<none>>idle", "new:idle>busy", "new:busy>idle", "new:idle>busy"}
	if !slices.Equal(edges, want) {
		t.Errorf("OnTransitions heard %v, want %v", edges, want)
	}
	if !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
		t.Errorf("seqs %v are not each once in order", seqs)
	}
}

// TestFailureWindowAgesWithoutWrite: an entity that failed leaves the
// queue, the in-window count and the active reasons once its failure is
// older than the window, with no write and no change in the store; an open
// entity never ages.
func TestFailureWindowAgesWithoutWrite(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	register(t, w, "session", "failed", "running")
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "failed", To: "failed", ExpectFrom: "running",
		Actor:  transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: "run.failed.exit_nonzero", Message: "exit 3", ClaimStatus: "observed", Confidence: 1}}); err != nil {
		t.Fatal(err)
	}
	v := New(st, clock.Now, time.Hour)
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	version, err := st.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		after   time.Duration
		current bool
	}{
		{0, true},
		{time.Hour, true}, // the window's last instant still counts
		{time.Hour + time.Millisecond, false},
		{48 * time.Hour, false},
	} {
		now := testNow.Add(c.after)
		if err := v.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		q := v.Attention(attentionQuery(), now)
		counts := v.Counts(now)
		reasons := v.ActiveReasons(now)[ReasonKey{Code: "run.failed.exit_nonzero", Severity: state.SeverityCritical}]
		want := 0
		if c.current {
			want = 1
		}
		if q.Total != want || len(q.Items) != want || counts.InWindow != want || counts.Queue != want || reasons != want {
			t.Errorf("%v after the failure: queue %d (%d items), in window %d, queue count %d, reasons %d; want %d each",
				c.after, q.Total, len(q.Items), counts.InWindow, counts.Queue, reasons, want)
		}
	}
	if after, err := st.DataVersion(ctx); err != nil || after != version {
		t.Errorf("the store changed while the window aged (%d to %d, %v)", version, after, err)
	}
}

// TestConcurrentReadersRunAndWriter runs the background loop, a writer in
// another store and readers of every surface at once (meant for -race),
// then checks the view reached the writer's last state.
func TestConcurrentReadersRunAndWriter(t *testing.T) {
	st, cli := twoStores(t)
	w := &transitions.Writer{Store: cli}
	v := New(st, nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	var heard sync.Map
	v.OnChange(func(_, cur *store.Entity) { heard.Store(cur.ID, cur.LifecycleOr("")) })

	var wg sync.WaitGroup
	wg.Go(func() { v.Run(ctx, time.Millisecond, func(err error) { t.Error(err) }) })
	const agents, moves = 20, 10
	writerDone := make(chan struct{})
	wg.Go(func() {
		defer close(writerDone)
		for i := 0; i < agents; i++ {
			id := fmt.Sprintf("a-%02d", i)
			idle := "idle"
			if _, err := w.Register(ctx, transitions.Registration{
				Entity: store.Entity{Type: "agent", ID: id, Lifecycle: &idle}, Actor: transitions.ActorOrchestrator,
			}); err != nil {
				t.Error(err)
				return
			}
			from, to := "idle", "busy"
			for j := 0; j < moves; j++ {
				if _, err := w.Transition(ctx, agentMove(id, from, to)); err != nil {
					t.Error(err)
					return
				}
				from, to = to, from
			}
		}
	})
	// untilWritten runs step over and over until the writer is done.
	untilWritten := func(step func()) {
		wg.Go(func() {
			for {
				select {
				case <-writerDone:
					return
				default:
				}
				step()
			}
		})
	}
	// Repacking a few records at a time (compact.go), between and beside
	// the changes.
	defer func(n int) { compactChunk = n }(compactChunk)
	compactChunk = 3
	untilWritten(func() { v.compact(0) })
	for r := 0; r < 2; r++ {
		untilWritten(func() {
			now := time.Now()
			_ = v.Sync(ctx)
			v.Attention(attentionQuery(), now)
			v.Counts(now)
			v.ActiveReasons(now)
			v.QueueBySeverity(now)
			v.Get("agent", "a-00", now)
			v.Each("agent", func(e *Entry) { _ = e.Open() })
			v.Groups(func(Group, int) {})
		})
	}
	<-writerDone
	// moves is even: every agent ends idle.
	testenv.Eventually(t, "the view holds every agent idle", 2*time.Minute, func() (bool, string) {
		n := 0
		v.Each("agent", func(e *Entry) {
			if e.Entity.LifecycleOr("") == "idle" {
				n++
			}
		})
		last, _ := heard.Load(fmt.Sprintf("a-%02d", agents-1))
		return n == agents && last == "idle", fmt.Sprintf("%d of %d idle, last agent heard %v", n, agents, last)
	})
	cancel()
	wg.Wait()
}

// TestOrphanLingersPastFailureWindow: an ended entity whose process still
// lives (health orphaned) keeps its items in the queue, the queue's
// counts and the active reasons whatever its age; once the probe records
// the process gone, the failure window applies again.
func TestOrphanLingersPastFailureWindow(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	clock := testenv.NewClock(testNow)
	w := &transitions.Writer{Store: cli, Now: clock.Now}
	register(t, w, "session", "o-1", "running")
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "o-1", To: "failed", ExpectFrom: "running",
		Actor:  transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: "run.failed.exit_nonzero", Message: "exit 3", ClaimStatus: "observed", Confidence: 1}}); err != nil {
		t.Fatal(err)
	}
	observe := func(h state.Health, reasons []state.StateReason) {
		t.Helper()
		e, err := cli.Get(ctx, "session", "o-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.RecordObservation(ctx, "session", "o-1", store.Observation{Health: h, Delivery: state.DeliveryNotExpected,
			Reasons: reasons, HealthSince: clock.Now(), SeenSeq: e.LastSeq, At: clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	observe(state.HealthOrphaned, []state.StateReason{{Code: state.RunHealthOrphaned, Message: "process still alive after the end was recorded"}})
	v := New(st, clock.Now, time.Hour)
	for _, c := range []struct {
		name   string
		after  time.Duration
		health state.Health
		want   int
	}{
		{"orphan inside the window", 0, state.HealthOrphaned, 2},
		{"orphan long past the window", 48 * time.Hour, state.HealthOrphaned, 2},
		{"its process gone, past the window", 49 * time.Hour, state.HealthOK, 0},
	} {
		now := testNow.Add(c.after)
		if c.health != state.HealthOrphaned {
			clock.Set(now)
			observe(c.health, nil)
		}
		if err := v.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		q := v.Attention(attentionQuery(), now)
		counts := v.Counts(now)
		reasons := v.ActiveReasons(now)[ReasonKey{Code: "run.failed.exit_nonzero", Severity: state.SeverityCritical}]
		wantReasons := min(c.want, 1)
		if q.Total != c.want || counts.Queue != c.want || reasons != wantReasons {
			t.Errorf("%s: queue %d, queue count %d, reasons %d; want %d, %d, %d", c.name, q.Total, counts.Queue, reasons, c.want, c.want, wantReasons)
		}
		all, err := cli.AttentionCandidates(ctx, now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if built := attention.Build(all, nil, attentionQuery(), now); built.Total != c.want {
			t.Errorf("%s: the store's queue has %d items, the view's %d", c.name, built.Total, q.Total)
		}
	}
}

// versionCalls tells each DataVersion read, the start of every Sync; the
// reads after the second wait for gate, so a test can commit between.
type versionCalls struct {
	Source
	calls chan struct{}
	n     *atomic.Int32
	gate  chan struct{}
}

func (s versionCalls) DataVersion(ctx context.Context) (int64, error) {
	if s.n.Add(1) > 2 {
		<-s.gate
	}
	v, err := s.Source.DataVersion(ctx)
	select {
	case s.calls <- struct{}{}:
	default:
	}
	return v, err
}

// TestRunOnLooksAgainAfterAWake: a commit's event can come before the
// commit is visible; a commit made just after the sync its event (or a
// kick) woke is read by the next look, not at the safety net's period.
func TestRunOnLooksAgainAfterAWake(t *testing.T) {
	for _, by := range []string{"wake", "kick"} {
		t.Run(by, func(t *testing.T) {
			st, cli := twoStores(t)
			src := versionCalls{Source: st, calls: make(chan struct{}, 1), n: new(atomic.Int32), gate: make(chan struct{})}
			v := New(src, time.Now, time.Hour)
			ctx, cancel := context.WithCancel(context.Background())
			if err := v.Load(ctx); err != nil {
				t.Fatal(err)
			}
			<-src.calls
			wake := make(chan struct{}, 1)
			done := make(chan struct{})
			go func() { defer close(done); v.RunOn(ctx, wake, time.Hour, nil) }()
			t.Cleanup(func() { cancel(); <-done })
			if by == "wake" {
				wake <- struct{}{}
			} else {
				v.Kick()
			}
			<-src.calls // the woken sync has read the version: the commit lands after it
			register(t, &transitions.Writer{Store: cli, Now: time.Now}, "session", "late", "running")
			close(src.gate) // any later look reads the commit
			testenv.Eventually(t, "the late commit in the view", 30*time.Second, func() (bool, string) {
				_, ok := v.Get("session", "late", time.Now())
				return ok, fmt.Sprintf("%d held", v.Len())
			})
		})
	}
}
