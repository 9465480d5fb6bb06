package daemon

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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
		armPacer()
	})
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
