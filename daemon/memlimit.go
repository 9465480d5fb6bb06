package daemon

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The collector's headroom (ADR-0042): a soft memory limit, set after every
// collection from what it found live, caps the heap's growth at half the
// live heap (never below 16 MB, where GOGC's own pacing binds). It follows
// the heap, never holding the daemon to a size its entities outgrew.
const (
	// headroomShare is the headroom over the live heap, as a share of it.
	headroomShare = 0.5
	// headroomFloor is the least headroom, in bytes.
	headroomFloor = 16 << 20
)

var memLimitSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
}

// softLimit is the limit for what the last collection found: non-heap,
// live heap and headroom.
func softLimit(live, total, objects, unused, free, released uint64) int64 {
	other := int64(total) - int64(objects+unused+free+released)
	other = max(other, 0)
	head := max(int64(float64(live)*headroomShare), headroomFloor)
	return other + int64(live) + head
}

// paceMemory sets the soft memory limit after every collection (on the
// finalizer goroutine: no wake-up of its own) unless the operator set GOGC
// or GOMEMLIMIT; it says whether it is on. Armed once per process.
func paceMemory() bool {
	if os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != "" {
		return false
	}
	pacerOnce.Do(armPacer)
	return true
}

var pacerOnce sync.Once

// pacerToken is freed at each collection; its finalizer re-arms it.
type pacerToken struct{ _ [16]byte }

func armPacer() {
	runtime.SetFinalizer(&pacerToken{}, func(*pacerToken) {
		setSoftLimit()
		releaser.collected()
		armPacer()
	})
}

// Giving the heap back once quiet (ADR-0052, ADR-0061): once no collection
// has come for quietAfter and enough of the heap is mapped but free, the
// views repack and the daemon returns it all at once (debug.FreeOSMemory).
// The timer is armed by collections only: no wake-up while busy or idle.
const (
	// quietAfter is how long without a collection counts as quiet.
	quietAfter = 5 * time.Second
	// releaseAtLeast and releaseShare of the live heap are the least free heap worth a collection.
	releaseAtLeast = 1 << 20
	releaseShare   = 0.0625
)

type heapRelease struct {
	after time.Duration // quietAfter, but for tests
	mu    sync.Mutex
	timer *time.Timer
	// free reads the mapped free heap and the live heap; give returns them (for tests).
	free func() (free, live uint64)
	give func()
	// compact are the views' Compact, run first so one collection frees what they moved (under mu).
	compact map[*int]func() int
}

var releaser = &heapRelease{after: quietAfter, free: heapFree, give: debug.FreeOSMemory}

func (h *heapRelease) collected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer == nil {
		h.timer = time.AfterFunc(h.after, h.quiet)
		return
	}
	h.timer.Reset(h.after)
}

// onQuiet adds a compaction the quiet release runs first, until removed.
func (h *heapRelease) onQuiet(compact func() int) (remove func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.compact == nil {
		h.compact = map[*int]func() int{}
	}
	k := new(int)
	h.compact[k] = compact
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.compact, k)
	}
}

// quiet repacks the views, then gives the free heap back when a repack
// moved anything or the free heap is worth a collection.
func (h *heapRelease) quiet() {
	h.mu.Lock()
	compact := make([]func() int, 0, len(h.compact))
	for _, c := range h.compact {
		compact = append(compact, c)
	}
	h.mu.Unlock()
	moved := 0
	for _, c := range compact {
		moved += c()
	}
	free, live := h.free()
	if moved > 0 || worthReleasing(free, live) {
		h.give()
	}
}

func worthReleasing(free, live uint64) bool {
	return free > max(releaseAtLeast, uint64(float64(live)*releaseShare))
}

// heapFree is the free pages a scavenge can give back (not unused parts of
// live spans, or the timer would release for nothing) and the live heap.
// Its samples are its own: two timer callbacks may overlap.
func heapFree() (free, live uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(samples)
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	return v(0), v(1)
}

func setSoftLimit() {
	metrics.Read(memLimitSamples)
	v := func(i int) uint64 {
		if memLimitSamples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return memLimitSamples[i].Value.Uint64()
	}
	live := v(0)
	if live == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	debug.SetMemoryLimit(softLimit(live, v(1), v(2), v(3), v(4), v(5)))
}
