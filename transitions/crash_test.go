package transitions

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

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/store/sqlite"
)

// TestCrashAtAnyInstantLeavesConsistentDB kills a writer process with
// SIGKILL at arbitrary instants while it registers sessions and moves them
// pending → running → completed, then reopens the file and checks that it
// is consistent: integrity_check ok, every entity's lifecycle is the target
// of its last audit row, the rows of an entity form its path through the
// graph with nothing missing, and every write the writer was told had
// committed is there.
func TestCrashAtAnyInstantLeavesConsistentDB(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	st, path := openTestStore(t)
	ctx := context.Background()
	acked := map[string]string{} // entity id -> last lifecycle acknowledged
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	const rounds = 8
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrashWriter$")
		cmd.Env = append(os.Environ(), "WATCHDOG_CRASH_DB="+path, "WATCHDOG_CRASH_ROUND="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it acknowledge a random number of writes, then kill it
		// wherever it is: inside a transaction, in a commit, between two.
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

	// A fresh handle, as a restarted daemon would open it.
	st.Close()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen after crashes: %v", err)
	}
	defer st.Close()
	db := testenv.SQL(t, st.Path())
	var integrity string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: %q %v", integrity, err)
	}
	var fk int
	if err := db.QueryRow("SELECT COUNT(*) FROM pragma_foreign_key_check").Scan(&fk); err != nil || fk != 0 {
		t.Errorf("foreign_key_check: %d rows, %v", fk, err)
	}
	list, err := st.List(ctx, store.Filter{Type: "session"})
	if err != nil {
		t.Fatal(err)
	}
	path3 := []string{"pending", "running", "completed"}
	for _, e := range list {
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
	byID := map[string]store.Entity{}
	for _, e := range list {
		byID[e.ID] = e
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
}

// TestHelperCrashWriter is the body of the writer process above; it does
// nothing in a normal test run. It writes from several goroutines until it
// is killed, and prints "ID LIFECYCLE" after each write has committed.
func TestHelperCrashWriter(t *testing.T) {
	path := os.Getenv("WATCHDOG_CRASH_DB")
	if path == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w := &Writer{Store: st, Now: time.Now}
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	ack := func(id, to string) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, "%s %s\n", id, to)
		out.Flush()
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Several writers at once, so that the kill also lands inside group
	// commits (several transitions in one transaction and one fsync).
	const writers = 4
	for g := range writers {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%s-w%d-%06d", os.Getenv("WATCHDOG_CRASH_ROUND"), g, i)
				pending := "pending"
				if _, err := w.Register(ctx, Registration{Entity: store.Entity{Type: "session", ID: id, Lifecycle: &pending}, Actor: ActorOrchestrator}); err != nil {
					fail(err)
				}
				ack(id, "pending")
				for _, to := range []string{"running", "completed"} {
					if _, err := w.Transition(ctx, Request{Type: "session", ID: id, To: to, Actor: ActorOrchestrator}); err != nil {
						fail(err)
					}
					ack(id, to)
				}
			}
		}()
	}
	select {} // until killed
}
