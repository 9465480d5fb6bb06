package storetest

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"watchdog/store"
	"watchdog/transitions"
)

// crashEnv carries the store's DSN to the crash writer (HelperMain);
// crashRoundEnv the round, which names its entities.
const (
	crashEnv      = "WATCHDOG_STORETEST_CRASH_DSN"
	crashRoundEnv = "WATCHDOG_STORETEST_CRASH_ROUND"
)

// testCrash kills a writer process (this test binary again, as
// HelperMain) with SIGKILL at arbitrary instants while it registers
// sessions and moves them pending → running → completed, then checks
// through a fresh handle that every entity's lifecycle is the target of
// its last audit row, that its rows are its path through the graph with
// nothing missing, and that every write the writer was told had committed
// is there.
func testCrash(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dsn := h.New(t)
	ctx := context.Background()
	acked := map[string]string{} // entity id -> last lifecycle acknowledged
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const rounds = 6
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dsn, crashRoundEnv+"="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 20 + rng.IntN(200)
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			id, to, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				t.Fatalf("helper said %q", sc.Text())
			}
			acked[id] = to
			if n++; n == killAfter {
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := cmd.Wait(); err == nil {
			t.Fatalf("round %d: the writer ended on its own after %d writes", round, n)
		}
	}
	if h.Quiesce != nil {
		h.Quiesce(t, dsn)
	}
	// A fresh handle, as a restarted daemon would open it.
	st := open(t, h, dsn)
	list, err := st.List(ctx, store.Filter{Type: "session"})
	if err != nil {
		t.Fatal(err)
	}
	path3 := []string{"pending", "running", "completed"}
	byID := map[string]store.Entity{}
	for _, e := range list {
		byID[e.ID] = e
		rows, err := st.Transitions(ctx, e.Type, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		lc := e.LifecycleOr("")
		if len(rows) == 0 || len(rows) > 3 || rows[len(rows)-1].Seq != e.LastSeq || rows[len(rows)-1].To != lc {
			t.Errorf("%s: lifecycle %s, last_seq %d, audit %+v", e.ID, lc, e.LastSeq, rows)
			continue
		}
		for i, r := range rows {
			if r.To != path3[i] || (i == 0) != (r.From == nil) || (i > 0 && *r.From != path3[i-1]) {
				t.Errorf("%s: audit row %d is %v -> %s", e.ID, i, r.From, r.To)
			}
		}
		if e.Terminal != (lc == "completed") {
			t.Errorf("%s: %s with terminal=%v", e.ID, lc, e.Terminal)
		}
	}
	rank := map[string]int{"pending": 0, "running": 1, "completed": 2}
	for id, to := range acked {
		e, ok := byID[id]
		if !ok {
			t.Errorf("%s: acknowledged %s, not in the store", id, to)
			continue
		}
		if rank[e.LifecycleOr("")] < rank[to] {
			t.Errorf("%s: acknowledged %s, store says %s", id, to, e.LifecycleOr(""))
		}
	}
	t.Logf("%d rounds, %d entities, %d acknowledged", rounds, len(list), len(acked))
	if len(acked) == 0 {
		t.Fatal("the writer acknowledged nothing: the test tested nothing")
	}
	// The feed, read from the start, holds every entity: nothing was
	// committed without its revision.
	b, err := st.ChangesSince(ctx, store.Cursor{}, len(list)+1)
	if err != nil || len(b.Entities) != len(list) {
		t.Errorf("feed from the start: %d entities of %d, %v", len(b.Entities), len(list), err)
	}
}

// crashWriter writes from several goroutines until it is killed, printing
// "ID LIFECYCLE" after each write has committed.
func crashWriter(dsn string, openStore func(ctx context.Context, dsn string) (store.Backend, error)) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	st, err := openStore(ctx, dsn)
	if err != nil {
		fail(err)
	}
	w := &transitions.Writer{Store: st, Now: time.Now}
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	ack := func(id, to string) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, "%s %s\n", id, to)
		out.Flush()
	}
	const writers = 4
	for g := range writers {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%s-w%d-%06d", os.Getenv(crashRoundEnv), g, i)
				pending := "pending"
				if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: id, Lifecycle: &pending}, Actor: transitions.ActorOrchestrator}); err != nil {
					fail(err)
				}
				ack(id, "pending")
				for _, to := range []string{"running", "completed"} {
					if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: id, To: to, Actor: transitions.ActorOrchestrator}); err != nil {
						fail(err)
					}
					ack(id, to)
				}
			}
		}()
	}
	select {} // until killed
}
