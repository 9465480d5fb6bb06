package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
	"watchdog/store"
)

// TestTakeLease walks a lease's life: taken when free, renewed by its
// holder, refused to another while it runs, taken over once expired,
// released only by its holder.
func TestTakeLease(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	ttl := 10 * time.Second
	steps := []struct {
		name   string
		holder string
		at     time.Time
		want   bool
	}{
		{"free: a takes it", "a", t0, true},
		{"held: b is refused", "b", t0.Add(5 * time.Second), false},
		{"a renews", "a", t0.Add(8 * time.Second), true},
		{"renewed: b still refused after the first expiry", "b", t0.Add(12 * time.Second), false},
		{"expired: b takes over", "b", t0.Add(19 * time.Second), true},
		{"a comes back late: refused", "a", t0.Add(20 * time.Second), false},
	}
	for _, st := range steps {
		got, err := s.TakeLease(ctx, "leader", st.holder, st.at, ttl)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got != st.want {
			t.Errorf("%s: TakeLease(%s) = %v, want %v", st.name, st.holder, got, st.want)
		}
	}
	if h, _, err := s.LeaseHolder(ctx, "leader", t0.Add(20*time.Second)); err != nil || h != "b" {
		t.Errorf("holder = %q, %v; want b", h, err)
	}
	// Only the holder releases it.
	if err := s.ReleaseLease(ctx, "leader", "a"); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := s.LeaseHolder(ctx, "leader", t0.Add(20*time.Second)); h != "b" {
		t.Errorf("a released b's lease: holder now %q", h)
	}
	if err := s.ReleaseLease(ctx, "leader", "b"); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := s.LeaseHolder(ctx, "leader", t0.Add(20*time.Second)); h != "" {
		t.Errorf("after release: holder %q", h)
	}
	if ok, err := s.TakeLease(ctx, "leader", "a", t0.Add(21*time.Second), ttl); err != nil || !ok {
		t.Errorf("after release a takes it at once: %v, %v", ok, err)
	}
}

// TestTakeLeaseRace: many stores on one file race for one expired lease;
// exactly one wins.
func TestTakeLeaseRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	ctx := context.Background()
	const n = 8
	stores := make([]*Store, n)
	for i := range stores {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	now := time.Unix(1_700_000_000, 0)
	if ok, err := stores[0].TakeLease(ctx, "leader", "old", now.Add(-time.Minute), time.Second); err != nil || !ok {
		t.Fatalf("seed: %v %v", ok, err)
	}
	var wg sync.WaitGroup
	won := make([]bool, n)
	for i := range stores {
		wg.Go(func() {
			ok, err := stores[i].TakeLease(ctx, "leader", string(rune('a'+i)), now, time.Minute)
			if err != nil {
				t.Error(err)
			}
			won[i] = ok
		})
	}
	wg.Wait()
	winners := 0
	for _, w := range won {
		if w {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("%d winners of one expired lease, want 1 (%v)", winners, won)
	}
}

// TestDaemonsSeenAndHostlessFilter: presence rows read back with their
// times; AlsoHostless keeps this host's and the host-less entities only.
func TestDaemonsSeenAndHostlessFilter(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	at := time.Unix(1_700_000_000, 0)
	for _, h := range []string{"a", "b"} {
		if err := s.MarkDaemon(ctx, h, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkDaemon(ctx, "a", at.Add(-time.Hour)); err != nil { // never goes back
		t.Fatal(err)
	}
	seen, err := s.DaemonsSeen(ctx)
	if err != nil || len(seen) != 2 || !seen["a"].Equal(at) || !seen["b"].Equal(at) {
		t.Errorf("DaemonsSeen = %v, %v", seen, err)
	}

	for _, e := range []store.Entity{
		{Type: "show", ID: "free", Lifecycle: strp("active")},
		{Type: "show", ID: "mine", HostID: "a", Lifecycle: strp("active")},
		{Type: "show", ID: "theirs", HostID: "b", Lifecycle: strp("active")},
	} {
		if _, err := s.Register(ctx, e, "cli", at); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		f    store.Filter
		want []string
	}{
		{store.Filter{HostID: "a"}, []string{"mine"}},
		{store.Filter{HostID: "a", AlsoHostless: true}, []string{"free", "mine"}},
		{store.Filter{HostID: "b", AlsoHostless: true, OpenOnly: true}, []string{"free", "theirs"}},
	} {
		list, err := s.List(ctx, c.f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("List(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
}

// TestLockDaemonHost: daemons of different hosts share a database; a
// second daemon of the same host is refused.
func TestLockDaemonHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	a, err := LockDaemonHost(path, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := LockDaemonHost(path, "host-b")
	if err != nil {
		t.Fatalf("another host on the same database: %v", err)
	}
	defer b.Release()
	odd, err := LockDaemonHost(path, "../x y")
	if err != nil {
		t.Fatalf("a host id that is no file name: %v", err)
	}
	defer odd.Release()
	if _, err := LockDaemonHost(path, "host-a"); err == nil {
		t.Fatal("a second daemon of host-a was let in")
	}
}
