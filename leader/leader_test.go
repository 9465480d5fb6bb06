package leader

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/store/sqlite"
)

// openShared opens one SQLite file through two store handles, as two
// daemons on one host share it.
func openShared(t *testing.T) (*sqlite.Store, *sqlite.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	ctx := context.Background()
	a, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// TestLeaseHandOver: of two daemons on one store one leads; a clean stop
// hands over at the other's next try; a leader that stops renewing (a
// SIGKILL) is replaced once its lease expired, and never before.
func TestLeaseHandOver(t *testing.T) {
	sa, sb := openShared(t)
	ctx := context.Background()
	clock := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return clock }
	a := New(Lease{Store: sa, Holder: "host-a", TTL: 10 * time.Second, Now: now}, Options{Trust: time.Hour})
	b := New(Lease{Store: sb, Holder: "host-b", TTL: 10 * time.Second, Now: now}, Options{Trust: time.Hour})

	if !a.Try(ctx) || !a.Leader() {
		t.Fatal("a, first to try, does not lead")
	}
	if b.Try(ctx) || b.Leader() {
		t.Fatal("b leads beside a")
	}
	// A clean stop: b takes over at its next try.
	a.Stop()
	if a.Leader() {
		t.Error("a still leads after Stop")
	}
	if !b.Try(ctx) {
		t.Fatal("b did not take over after a stopped")
	}
	if a.Try(ctx) {
		t.Error("a took leadership back from a live b")
	}
	// b dies without a word: a waits for the lease to expire.
	clock = clock.Add(9 * time.Second)
	if a.Try(ctx) {
		t.Error("a took over before b's lease expired")
	}
	clock = clock.Add(2 * time.Second)
	if !a.Try(ctx) {
		t.Error("a did not take over once b's lease expired")
	}
}

// flaky is a Backend that fails on demand: the store unreachable.
type flaky struct{ fail atomic.Bool }

func (f *flaky) TryLock(context.Context) (bool, error) {
	if f.fail.Load() {
		return false, errors.New("store unreachable")
	}
	return true, nil
}
func (f *flaky) Unlock(context.Context) error { return nil }

// TestTrustRunsOut: a leader that cannot reach its store stops answering
// Leader() true once its last success is Trust old, and says so.
func TestTrustRunsOut(t *testing.T) {
	b := &flaky{}
	var changes []bool
	e := New(b, Options{Trust: 50 * time.Millisecond, OnChange: func(l bool) { changes = append(changes, l) }})
	if !e.Try(context.Background()) {
		t.Fatal("not leading after a success")
	}
	b.fail.Store(true)
	testenv.Eventually(t, "leadership lapses without a renewal", 2*time.Minute, func() (bool, string) {
		return !e.Try(context.Background()), "still leading"
	})
	if len(changes) != 2 || !changes[0] || changes[1] {
		t.Errorf("OnChange heard %v, want [true false]", changes)
	}
	var nilElector *Elector
	if nilElector.Leader() {
		t.Error("a nil Elector leads")
	}
}

// TestRunStopsAndReleases: Start tries at once; its stop releases the
// lease so that another holder takes it without waiting for expiry.
func TestRunStopsAndReleases(t *testing.T) {
	sa, sb := openShared(t)
	a := New(Lease{Store: sa, Holder: "host-a"}, Options{Every: 10 * time.Millisecond})
	stop := a.Start(context.Background())
	testenv.Eventually(t, "a leads", 2*time.Minute, func() (bool, string) { return a.Leader(), "not yet" })
	stop()
	b := New(Lease{Store: sb, Holder: "host-b"}, Options{})
	if !b.Try(context.Background()) {
		t.Error("b could not take the lease a released")
	}
}

// scripted is a Backend answering from a script.
type scripted struct {
	ok  []bool
	err []error
	i   int
}

func (s *scripted) TryLock(context.Context) (bool, error) {
	ok, err := s.ok[s.i], s.err[s.i]
	s.i++
	return ok, err
}
func (s *scripted) Unlock(context.Context) error { return nil }

// TestLossEndsLeadershipAtOnce: "another holds it" and a lost hold end
// leadership at once, however long the last success would be trusted;
// an error of a slow store does not.
func TestLossEndsLeadershipAtOnce(t *testing.T) {
	slow := errors.New("timeout")
	tests := []struct {
		name string
		ok   bool
		err  error
		want bool
	}{
		{name: "another daemon holds it", ok: false, err: nil, want: false},
		{name: "the hold is lost with its connection", ok: false, err: fmt.Errorf("%w: connection reset", ErrLost), want: false},
		{name: "the store is slow: the last success stays trusted", ok: false, err: slow, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var changes []bool
			e := New(&scripted{ok: []bool{true, tt.ok}, err: []error{nil, tt.err}},
				Options{Trust: time.Hour, OnChange: func(l bool) { changes = append(changes, l) }})
			if !e.Try(context.Background()) {
				t.Fatal("not leading after a success")
			}
			if got := e.Try(context.Background()); got != tt.want || e.Leader() != tt.want {
				t.Errorf("leads %v (Leader() %v), want %v", got, e.Leader(), tt.want)
			}
			if want := 1 + map[bool]int{true: 0, false: 1}[tt.want]; len(changes) != want {
				t.Errorf("OnChange heard %v, want %d changes", changes, want)
			}
		})
	}
}
