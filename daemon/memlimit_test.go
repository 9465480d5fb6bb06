package daemon

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestSoftLimit: the limit is the runtime's memory beside the heap, the
// live heap and half of it over, never less than the floor over.
func TestSoftLimit(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name                                      string
		live, total, objects, unused, free, relsd uint64
		want                                      int64
	}{
		{"a small heap: the floor", 2 * mb, 20 * mb, 3 * mb, 1 * mb, 2 * mb, 4 * mb, (20-3-1-2-4)*mb + 2*mb + headroomFloor},
		{"a large heap: half over", 100 * mb, 300 * mb, 120 * mb, 10 * mb, 50 * mb, 100 * mb, (300-120-10-50-100)*mb + 100*mb + 50*mb},
		{"figures that do not add up: no negative share", 40 * mb, 10 * mb, 20 * mb, 0, 0, 0, 40*mb + 20*mb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := softLimit(tc.live, tc.total, tc.objects, tc.unused, tc.free, tc.relsd); got != tc.want {
				t.Errorf("softLimit = %d MB, want %d MB", got/mb, tc.want/mb)
			}
		})
	}
}

// TestPaceMemoryLeavesTheOperatorsChoice: GOGC or GOMEMLIMIT set, the
// daemon sets no limit of its own.
func TestPaceMemoryLeavesTheOperatorsChoice(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "off")
			if paceMemory() {
				t.Errorf("%s set, and the daemon paces the collector anyway", env)
			}
		})
	}
}

// TestWorthReleasing: the free heap is given back when it is more than
// the floor (1 MB) and more than a sixteenth of the live heap.
func TestWorthReleasing(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name       string
		free, live uint64
		want       bool
	}{
		{"nothing free", 0, 10 * mb, false},
		{"under the floor", mb / 2, 2 * mb, false},
		{"over the floor, a small heap", 2 * mb, 2 * mb, true},
		{"over the floor, under a sixteenth of a large heap", 5 * mb, 100 * mb, false},
		{"over a sixteenth of a large heap", 7 * mb, 100 * mb, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := worthReleasing(tc.free, tc.live); got != tc.want {
				t.Errorf("worthReleasing(%d MB free, %d MB live) = %v, want %v", tc.free/mb, tc.live/mb, got, tc.want)
			}
		})
	}
}

// TestReleaseOnceQuiet: a collection arms the timer; once it fires with
// the free heap worth it the heap is given back, and not when it is not.
func TestReleaseOnceQuiet(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name string
		free uint64
		want bool
	}{
		{"a burst's heap free: given back", 64 * mb, true},
		{"little free: kept", mb / 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			given := make(chan struct{}, 1)
			checked := make(chan struct{}, 1)
			h := &heapRelease{
				after: time.Millisecond,
				free: func() (uint64, uint64) {
					defer func() { checked <- struct{}{} }()
					return tc.free, 8 * mb
				},
				give: func() { given <- struct{}{} },
			}
			h.collected()
			select {
			case <-checked:
			case <-time.After(2 * time.Minute):
				t.Fatal("the timer never fired in 2 minutes")
			}
			select {
			case <-given:
				if !tc.want {
					t.Errorf("%d MB free given back", tc.free/mb)
				}
			default:
				if tc.want {
					// quiet checks, then gives: wait for the give.
					select {
					case <-given:
					case <-time.After(2 * time.Minute):
						t.Errorf("%d MB free never given back", tc.free/mb)
					}
				}
			}
		})
	}
}

// TestHeapFreeReadsTheRuntime: after a collection the runtime reports a
// live heap, and what is free is read (not the zero of a missing metric).
func TestHeapFreeReadsTheRuntime(t *testing.T) {
	keep := make([]byte, 1<<20)
	runtime.GC()
	free, live := heapFree()
	if live < 1<<20 {
		t.Errorf("live heap %d B after a collection holding 1 MB", live)
	}
	t.Logf("free %d B, live %d B", free, live)
	runtime.KeepAlive(keep)
}

// TestQuietCompactsFirst: the quiet release runs the views' compactions
// before it weighs the free heap, and gives the heap back when one moved
// anything even with little free (the old copies are garbage only a
// collection frees); a removed compaction is not run.
func TestQuietCompactsFirst(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name  string
		moved int
		want  bool
	}{
		{"a compaction moved records: given back", 10000, true},
		{"nothing moved, little free: kept", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var order []string
			h := &heapRelease{
				free: func() (uint64, uint64) { order = append(order, "free"); return mb / 2, 8 * mb },
				give: func() { order = append(order, "give") },
			}
			remove := h.onQuiet(func() int { order = append(order, "compact"); return tc.moved })
			gone := h.onQuiet(func() int { order = append(order, "removed"); return 1 })
			gone()
			h.quiet()
			want := []string{"compact", "free"}
			if tc.want {
				want = append(want, "give")
			}
			if !slices.Equal(order, want) {
				t.Errorf("quiet ran %v, want %v", order, want)
			}
			remove()
			order = nil
			h.quiet()
			if !slices.Equal(order, []string{"free"}) {
				t.Errorf("after its removal quiet ran %v, want [free]", order)
			}
		})
	}
}
