package monitor

import (
	"container/heap"
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// BenchmarkUpdate10000 is adoption at start: 10,000 open entities handed
// in and applied (watch opened, deadline computed and placed), per op.
func BenchmarkUpdate10000(b *testing.B) {
	const n = 10000
	ents := make([]store.Entity, n)
	for i := range ents {
		ents[i] = session("s"+strconv.Itoa(i), 1000+i)
		ents[i].HeartbeatAt = t0.Add(time.Duration(i) * time.Millisecond)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m := New(Options{Reaper: &recorder{}, Watcher: newFakeWatcher(), Prober: aliveProber{}, HostID: "h1",
			Now: func() time.Time { return t0 }})
		for _, e := range ents {
			m.Update(e)
		}
		m.applyPending(ctx)
		if m.h.Len() != n {
			b.Fatalf("%d deadlines", m.h.Len())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entity")
}

// BenchmarkUpdateChanged is the steady state: one changed entity (a posted
// heartbeat) among 10,000 handed in and rescheduled.
func BenchmarkUpdateChanged(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	m := New(Options{Reaper: &recorder{}, Watcher: newFakeWatcher(), Prober: aliveProber{}, HostID: "h1",
		Now: func() time.Time { return t0 }})
	ents := make([]store.Entity, n)
	for i := range ents {
		ents[i] = session("s"+strconv.Itoa(i), 1000+i)
		m.Update(ents[i])
	}
	m.applyPending(ctx)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := &ents[i%n]
		e.HeartbeatAt = e.HeartbeatAt.Add(time.Second)
		m.Update(*e)
		m.applyPending(ctx)
		i++
	}
}

// BenchmarkHeap is the heap's own cost at 10,000 entries: move one entry
// (heap.Fix) and read the earliest, as a rescheduled deadline does.
func BenchmarkHeap(b *testing.B) {
	const n = 10000
	var h deadlineHeap
	all := make([]*tracked, n)
	for i := range all {
		all[i] = &tracked{index: -1}
		h.schedule(all[i], t0.Add(time.Duration(i*7919%n)*time.Second))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tr := all[i%n]
		h.schedule(tr, tr.at.time().Add(time.Duration(n)*time.Second))
		_ = h.peek()
		i++
	}
}

// BenchmarkHeapPushPop fills the heap with 10,000 deadlines and drains it.
func BenchmarkHeapPushPop(b *testing.B) {
	const n = 10000
	all := make([]*tracked, n)
	for i := range all {
		all[i] = &tracked{index: -1}
	}
	b.ReportAllocs()
	for b.Loop() {
		var h deadlineHeap
		for i, tr := range all {
			h.schedule(tr, t0.Add(time.Duration(i*7919%n)*time.Second))
		}
		for h.Len() > 0 {
			heap.Pop(&h)
		}
	}
}

// BenchmarkTrackedMemory is the monitor's heap per open entity at 10,000
// sessions as the memory bench registers them (no pid, no heartbeat
// file, no schedule; the view's Entity, so none is kept whole): the heap
// after a collection with them applied, less the heap before, per
// entity. The entities' own strings (the view's) are made before, so
// only what the monitor adds is counted: its tracking, its map and
// whatever key it makes.
func BenchmarkTrackedMemory(b *testing.B) {
	const n = 10000
	ents := make([]store.Entity, n)
	for i := range ents {
		ents[i] = session("t"+strconv.Itoa(i+1), 0) // the bench's ids
		ents[i].PIDStartTime, ents[i].PIDStartTicks = time.Time{}, 0
		ents[i].Health = state.HealthUnknown
	}
	ctx := context.Background()
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var per float64
	for b.Loop() {
		before := heap()
		m := New(Options{Reaper: &recorder{}, HostID: "h1", Now: func() time.Time { return t0 },
			Entity: func(string, string) (store.Entity, bool) { return store.Entity{}, false }})
		for i := range ents {
			m.Update(ents[i])
		}
		m.applyPending(ctx)
		after := heap()
		if m.ents.len() != n {
			b.Fatalf("%d tracked", m.ents.len())
		}
		runtime.KeepAlive(m)
		per = float64(int64(after)-int64(before)) / n
	}
	b.ReportMetric(per, "B/entity")
}

// BenchmarkFireDue10000 is deadline firing at 10,000 entities: every
// entity's idle threshold passes at once and fireDue runs each (the
// heartbeat job, its check through the reaper, the next deadline placed),
// per entity; the monitor and its entities are made outside the timing.
func BenchmarkFireDue10000(b *testing.B) {
	const n = 10000
	ents := make([]store.Entity, n)
	for i := range ents {
		ents[i] = session("t"+strconv.Itoa(i+1), 0)
		ents[i].PIDStartTime, ents[i].PIDStartTicks = time.Time{}, 0
	}
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		now := t0
		m := New(Options{Reaper: &recorder{}, HostID: "h1", Now: func() time.Time { return now },
			Entity: func(typ, id string) (store.Entity, bool) { return store.Entity{Type: typ, ID: id}, true }})
		for i := range ents {
			m.Update(ents[i])
		}
		m.applyPending(ctx)
		now = t0.Add(11 * time.Minute)
		b.StartTimer()
		m.fireDue(ctx)
		if next := m.h.peek(); next == nil || !next.at.time().After(now) {
			b.Fatal("deadlines left due")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/entity")
}
