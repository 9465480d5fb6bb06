package transitions

import (
	"context"
	"fmt"
	"testing"

	"watchdog/store"
)

// BenchmarkRegister measures one registration (insert + audit row).
func BenchmarkRegister(b *testing.B) {
	st, _ := openTestStore(b)
	w := &Writer{Store: st}
	ctx := context.Background()
	running := "running"
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := store.Entity{Type: "session", ID: fmt.Sprintf("r%09d", i), Lifecycle: &running, PID: 1}
		if _, err := w.Register(ctx, Registration{Entity: e, Actor: ActorOrchestrator}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransition measures one validated compare-and-set transition
// with its audit row (running -> completed), through the whole write path.
func BenchmarkTransition(b *testing.B) {
	st, _ := openTestStore(b)
	w := &Writer{Store: st}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		mustRegister(b, w, "session", fmt.Sprintf("s%09d", i), "running")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := w.Transition(ctx, Request{Type: "session", ID: fmt.Sprintf("s%09d", i), To: "completed", ExpectFrom: "running", Actor: ActorOrchestrator}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransitionBatch1000 ends 1,000 running sessions per operation,
// the size of a large reaper run, each in its own transaction as the
// reaper writes them.
func BenchmarkTransitionBatch1000(b *testing.B) {
	const batch = 1000
	st, _ := openTestStore(b)
	w := &Writer{Store: st}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < batch; j++ {
			mustRegister(b, w, "session", fmt.Sprintf("b%04d-%04d", i, j), "running")
		}
		b.StartTimer()
		for j := 0; j < batch; j++ {
			if _, err := w.Transition(ctx, Request{Type: "session", ID: fmt.Sprintf("b%04d-%04d", i, j), To: "aborted",
				ExpectFrom: "running", Reason: reason("system.health.process_dead_no_terminal"), Actor: ActorReaper}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "µs/transition")
}
