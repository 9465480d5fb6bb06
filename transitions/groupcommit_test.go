package transitions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"watchdog/state"
	"watchdog/store"
)

// TestConcurrentTransitionsEachGetTheirAnswer fires many transitions at
// once through one Writer, so that they share group commits: several
// racers per session asking for different terminals (one must win, the
// others lose their compare-and-set on expect_from), an edge the graph
// refuses, and a session that does not exist. Each request must get
// exactly its own answer, whatever group it landed in, and each success
// exactly one audit row.
func TestConcurrentTransitionsEachGetTheirAnswer(t *testing.T) {
	const sessions = 60
	st, _ := openTestStore(t)
	w := &Writer{Store: st}
	ctx := context.Background()
	for i := range sessions {
		mustRegister(t, w, "session", fmt.Sprintf("s%03d", i), "running")
	}
	racers := []struct {
		req  Request
		want error // for a loser; nil: may win
	}{
		{req: Request{To: "completed", ExpectFrom: "running", Actor: ActorOrchestrator}},
		{req: Request{To: "cancelled", ExpectFrom: "running", Reason: reason(state.RunCancelledOperator), Actor: ActorOrchestrator}},
		{req: Request{To: "aborted", ExpectFrom: "running", Reason: reason(state.SystemHealthProcessDeadNoTerminal), Actor: ActorReaper}},
		// Never allowed, before or after the winner: a refusal inside a
		// group must not fail the group.
		{req: Request{To: "pending", Actor: ActorOrchestrator}, want: ErrInvalidTransition},
		{req: Request{To: "completed", Actor: ActorOrchestrator}, want: ErrNotFound},
	}
	type outcome struct {
		res Result
		err error
	}
	out := make([][]outcome, sessions)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range sessions {
		out[i] = make([]outcome, len(racers))
		for r, racer := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := racer.req
				req.Type, req.ID = "session", fmt.Sprintf("s%03d", i)
				if racer.want == ErrNotFound {
					req.ID = fmt.Sprintf("missing%03d", i)
				}
				<-start
				res, err := w.Transition(ctx, req)
				out[i][r] = outcome{res, err}
			}()
		}
	}
	close(start)
	wg.Wait()

	for i := range sessions {
		id := fmt.Sprintf("s%03d", i)
		winner := ""
		for r, racer := range racers {
			o := out[i][r]
			switch {
			case racer.want != nil:
				if !errors.Is(o.err, racer.want) {
					t.Errorf("%s -> %s: %v, want %v", id, racer.req.To, o.err, racer.want)
				}
			case o.err == nil:
				if winner != "" {
					t.Errorf("%s: both %s and %s won", id, winner, racer.req.To)
				}
				winner = racer.req.To
				if o.res.Before.LifecycleOr("") != "running" || o.res.After.LifecycleOr("") != racer.req.To {
					t.Errorf("%s -> %s: answered %s -> %s", id, racer.req.To, o.res.Before.LifecycleOr("none"), o.res.After.LifecycleOr("none"))
				}
			case !errors.Is(o.err, ErrConflict):
				t.Errorf("%s -> %s lost with %v, want a conflict", id, racer.req.To, o.err)
			}
		}
		if winner == "" {
			t.Errorf("%s: nobody won", id)
			continue
		}
		rows, total, err := st.LatestTransitions(ctx, "session", id, 10)
		if err != nil {
			t.Fatal(err)
		}
		if total != 2 || rows[1].To != winner {
			t.Errorf("%s: audit rows %+v, want its registration and one row to %s", id, rows, winner)
		}
		e, err := st.Get(ctx, "session", id)
		if err != nil {
			t.Fatal(err)
		}
		if e.LifecycleOr("") != winner || e.LastSeq != rows[total-1].Seq {
			t.Errorf("%s is %s at seq %d, want %s at seq %d", id, e.LifecycleOr("none"), e.LastSeq, winner, rows[total-1].Seq)
		}
	}
	if _, err := st.Get(ctx, "session", "missing000"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused transition created its entity: %v", err)
	}
}
