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

// The collector's headroom (ADR-0042, third step). With the default GOGC
// (100) the heap grows to twice what is live before a collection and the
// runtime keeps about that much mapped: at 10,000 open entities the
// daemon's anonymous RSS was 2.5 to 3 times its live heap. A soft memory
// limit (debug.SetMemoryLimit), set again after every collection from
// what the collection found live, caps the headroom at half the live
// heap, and never below a floor of 16 MB: a large heap (past 16 MB live:
// about 10,000 entities) is collected when it has grown by half rather
// than doubled (CPU for memory), a smaller one stays under GOGC's own
// pacing, which the floor leaves binding. A quarter with a 4 MB floor
// halved the throughput of a burst of transitions at 10,000 entities
// (ADR-0042): a collection marks the whole live heap each time. The limit
// follows the heap: it never holds the daemon to a size its entities
// outgrew (the runtime caps what a limit's collections may cost; the
// next collection raises the limit to the new live heap).
const (
	// headroomShare is the headroom over the live heap, as a share of it.
	headroomShare = 0.5
	// headroomFloor is the least headroom, in bytes: up to 16 MB live,
	// GOGC's doubling gives no more than it.
	headroomFloor = 16 << 20
)

// memLimitSamples are the runtime's figures the limit is made of.
var memLimitSamples = []metrics.Sample{
	{Name: "/gc/heap/live:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
}

// softLimit is the memory limit for what the last collection found: the
// runtime's memory beside the heap (stacks, its own metadata), the live
// heap and the headroom over it.
func softLimit(live, total, objects, unused, free, released uint64) int64 {
	other := int64(total) - int64(objects+unused+free+released)
	other = max(other, 0)
	head := max(int64(float64(live)*headroomShare), headroomFloor)
	return other + int64(live) + head
}

// paceMemory sets the soft memory limit after every collection, unless
// the operator set GOGC or GOMEMLIMIT (their choice stands). It costs no
// wake-up of its own: it runs on the finalizer goroutine, once per
// collection (at least every two minutes, the runtime's forced one).
// It returns whether it is on.
// A process arms it once, however many daemons it runs (tests).
func paceMemory() bool {
	if os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != "" {
		return false
	}
	pacerOnce.Do(armPacer)
	return true
}

var pacerOnce sync.Once

// pacerToken is an object the collector frees at each collection: its
// finalizer sets the limit and arms a new one.
type pacerToken struct{ _ [16]byte }

func armPacer() {
	runtime.SetFinalizer(&pacerToken{}, func(*pacerToken) {
		setSoftLimit()
		releaser.collected()
		armPacer()
	})
}

// Giving the heap back once quiet (ADR-0052). After a burst (a fleet
// registering, a load of the view) the runtime keeps the heap the burst
// grew mapped and hands it back to the kernel a little at a time (its
// scavenger keeps about 10% over the heap goal, twice the live heap):
// a daemon that settled at 10,000 entities held 3 to 4 times its live
// heap as anonymous memory for minutes. Once no collection has come for
// quietAfter (5 s: the daemon allocates little, the burst is over) and more
// than releaseAtLeast of the heap is mapped but free, the daemon returns
// it all at once (debug.FreeOSMemory: one collection and a scavenge).
// Its own collection re-arms the timer, which then finds nothing to give
// back and nothing to repack (a repack waits for enough records changed
// since the last: ADR-0061); no wake-up while the daemon is busy (each
// collection pushes the timer back) nor while idle (the timer is armed
// by a collection: the runtime's forced one every two minutes at most).
const (
	// quietAfter is how long without a collection counts as quiet: with
	// 10 s the heap a sweep's list grew (every minute, 1.3 KB an entity
	// decoded from the store) stayed mapped for a sixth of each minute.
	quietAfter = 5 * time.Second
	// releaseAtLeast is the least free heap worth a collection to give
	// back; the share of the live heap (releaseShare) raises it for a
	// large heap. At 4 MB a collection (the runtime's forced one every two
	// minutes) that freed a quiet daemon's scrapes left up to 4 MB mapped
	// and free for as long as the daemon stayed quiet, 400 B an entity at
	// 10,000 (ADR-0061); at 1 MB an idle daemon buys at most one more
	// collection per forced one, a few milliseconds at 10,000 entities.
	releaseAtLeast = 1 << 20
	releaseShare   = 0.0625
)

// heapRelease is the one-shot timer a collection pushes back.
type heapRelease struct {
	after time.Duration // quietAfter, but for tests
	mu    sync.Mutex
	timer *time.Timer
	// free reads the heap's mapped free bytes and the live heap; give
	// returns them (the runtime's, but for tests).
	free func() (free, live uint64)
	give func()
	// compact are the daemons' views' Compact (ADR-0061), asked before
	// the free heap is weighed: what they moved out of scattered spans is
	// given back by the same collection (under mu).
	compact map[*int]func() int
}

var releaser = &heapRelease{after: quietAfter, free: heapFree, give: debug.FreeOSMemory}

// collected is called after every collection: the quiet begins again.
func (h *heapRelease) collected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer == nil {
		h.timer = time.AfterFunc(h.after, h.quiet)
		return
	}
	h.timer.Reset(h.after)
}

// onQuiet adds a compaction the quiet release runs first, until the
// returned func removes it (a daemon's views end with it; tests run many
// daemons in one process).
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

// quiet repacks what the views scattered (compactions), then gives the
// free heap back when a compaction moved anything (its old copies are
// garbage in spans only a collection frees) or the free heap is worth a
// collection.
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

// worthReleasing is whether free bytes mapped beside a live heap are
// worth a collection and a scavenge.
func worthReleasing(free, live uint64) bool {
	return free > max(releaseAtLeast, uint64(float64(live)*releaseShare))
}

// heapFree is the heap mapped and holding nothing (free pages: what a
// scavenge can give back; not the unused parts of spans that hold live
// objects, which it cannot, or the timer would release again and again
// for nothing), and the live heap.
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

// setSoftLimit reads what the last collection found and sets the limit.
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
