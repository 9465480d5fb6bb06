package deadline

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitFor waits for cond with a generous ceiling (the machine may be
// loaded: no test here fails for being slow), reporting what was last
// seen.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 2 minutes; last seen: %s", what, seen)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recorder keeps the order alarms ran in.
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) fn(name string) func() {
	return func() {
		r.mu.Lock()
		r.ran = append(r.ran, name)
		r.mu.Unlock()
	}
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ran...)
}

func TestAlarms(t *testing.T) {
	// Each case arms alarms and lists what must have run once every
	// alarm it armed ran or was stopped ("last" runs last by its time,
	// but a loaded machine may find several due at once, which then run
	// side by side: the set is held, not the order).
	cases := []struct {
		name string
		arm  func(c *Clock, r *recorder)
		want []string
	}{
		{"one", func(c *Clock, r *recorder) {
			c.Func(r.fn("last")).Set(0)
		}, []string{"last"}},
		{"stopped never runs", func(c *Clock, r *recorder) {
			a := c.Func(r.fn("stopped"))
			a.Set(time.Millisecond)
			a.Stop()
			c.Func(r.fn("last")).Set(50 * time.Millisecond)
		}, []string{"last"}},
		{"re-set replaces the earlier time", func(c *Clock, r *recorder) {
			a := c.Func(r.fn("moved"))
			a.Set(time.Hour)
			a.Set(0)
			c.Func(r.fn("last")).Set(100 * time.Millisecond)
		}, []string{"moved", "last"}},
		{"earlier brings a later one forward", func(c *Clock, r *recorder) {
			a := c.Func(r.fn("forward"))
			a.Set(time.Hour)
			a.Earlier(time.Now())
			c.Func(r.fn("last")).Set(100 * time.Millisecond)
		}, []string{"forward", "last"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, r := New(), &recorder{}
			tc.arm(c, r)
			waitFor(t, "the alarms", func() (bool, string) {
				ran := r.seen()
				return slices.Contains(ran, "last") && len(ran) >= len(tc.want), fmtRan(ran)
			})
			// Nothing else pending: a stopped alarm stays stopped.
			got := r.seen()
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if fmtRan(got) != fmtRan(want) {
				t.Fatalf("ran %s, want %s", fmtRan(got), fmtRan(want))
			}
			if n := c.Len(); n != 0 {
				t.Fatalf("%d alarms still pending", n)
			}
		})
	}
}

// TestEarlierKeepsTheSooner: Earlier never moves a pending alarm later.
// (Not a case of TestAlarms: one armed to fire at once may have fired
// before Earlier is called, on a loaded machine, and Earlier then arms
// it anew, as it should.)
func TestEarlierKeepsTheSooner(t *testing.T) {
	c := New()
	a := c.Func(func() {})
	a.Set(time.Hour)
	at, ok := a.Pending()
	if !ok {
		t.Fatal("a set alarm is not pending")
	}
	a.Earlier(time.Now().Add(2 * time.Hour))
	if got, ok := a.Pending(); !ok || !got.Equal(at) {
		t.Fatalf("after Earlier of a later time: pending %v at %v, want %v", ok, got, at)
	}
	a.Stop()
	if n := c.Len(); n != 0 {
		t.Fatalf("%d alarms still pending", n)
	}
}

func fmtRan(s []string) string { return "[" + strings.Join(s, " ") + "]" }

func TestSignalCoalescesAndRearms(t *testing.T) {
	c := New()
	a := c.Signal()
	if _, ok := a.Pending(); ok {
		t.Fatal("a new alarm is pending")
	}
	// Two fires before the reader takes one: one signal waits.
	a.Set(0)
	waitFor(t, "the first signal", func() (bool, string) { return len(a.C) == 1, "no signal" })
	a.Set(0)
	waitFor(t, "the second fire", func() (bool, string) { _, ok := a.Pending(); return !ok, "still pending" })
	<-a.C
	select {
	case <-a.C:
		t.Fatal("two signals for two fires not taken: want one")
	default:
	}
	// Re-armed after firing, it fires again.
	a.Set(0)
	select {
	case <-a.C:
	case <-time.After(2 * time.Minute):
		t.Fatal("a re-armed signal did not fire within 2 minutes")
	}
}

func TestManyAlarms(t *testing.T) {
	// Many alarms, armed from many goroutines in any order: each fires
	// once, and the clock ends empty.
	c := New()
	const n = 500
	var mu sync.Mutex
	fired := map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a := c.Func(func() {
				mu.Lock()
				fired[i]++
				mu.Unlock()
			})
			a.Set(time.Duration(n-i) * 100 * time.Microsecond)
		})
	}
	wg.Wait()
	waitFor(t, "every alarm", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(fired) == n, "fired " + strconv.Itoa(len(fired))
	})
	for i, k := range fired {
		if k != 1 {
			t.Fatalf("alarm %d fired %d times", i, k)
		}
	}
	if c.Len() != 0 {
		t.Fatalf("%d pending", c.Len())
	}
}

// BenchmarkRearm: one alarm set again and again among 1,000 pending (the
// monitor's and the store check's way), then stopped and set.
func BenchmarkRearm(b *testing.B) {
	c := New()
	for i := range 1000 {
		a := c.Func(func() {})
		a.Set(time.Hour + time.Duration(i)*time.Second)
		defer a.Stop()
	}
	a := c.Func(func() {})
	for i := 0; b.Loop(); i++ {
		a.Set(time.Minute + time.Duration(i%1000)*time.Millisecond)
		if i%2 == 1 {
			a.Stop()
		}
	}
	a.Stop()
}
