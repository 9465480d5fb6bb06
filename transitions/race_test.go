package transitions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store/sqlite"
)

// The in-process race (two handles, 1,000 sessions) is the store
// conformance suite's (store/storetest: ConcurrentTerminationsOneWinner),
// run against SQLite and PostgreSQL. What stays here is SQLite's own: the
// race between two OS processes sharing the file, and the file's
// integrity after it.

// assertOneTerminalEach checks the audit log: exactly one terminal row per
// entity, matching the stored lifecycle, and an intact database file.
func assertOneTerminalEach(t *testing.T, st *sqlite.Store, n int) {
	t.Helper()
	db := testenv.SQL(t, st.Path())
	var bad int
	err := db.QueryRow(`SELECT COUNT(*) FROM (
		SELECT e.id, COUNT(t.seq) AS terminals, MAX(t.to_lifecycle = e.lifecycle) AS matches
		FROM entities e LEFT JOIN transitions t
		  ON t.entity_type = e.type AND t.entity_id = e.id AND t.from_lifecycle = 'running'
		WHERE e.type = 'session'
		GROUP BY e.id HAVING terminals != 1 OR matches != 1)`).Scan(&bad)
	if err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d entities do not have exactly one terminal audit row matching their lifecycle", bad)
	}
	var terminals int
	if err := db.QueryRow("SELECT COUNT(*) FROM entities WHERE terminal = 1").Scan(&terminals); err != nil {
		t.Fatal(err)
	}
	if terminals != n {
		t.Errorf("%d terminal entities, want %d", terminals, n)
	}
	var integrity string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("integrity_check: %q %v", integrity, err)
	}
}

// TestConcurrentTerminationsAcrossProcesses runs the same race between two
// separate OS processes (this test binary, re-executed), the way a daemon
// and a CLI share a database file.
func TestConcurrentTerminationsAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const n = 300
	st, path := openTestStore(t)
	setup := &Writer{Store: st}
	for i := 0; i < n; i++ {
		mustRegister(t, setup, "session", fmt.Sprintf("s%04d", i), "running")
	}
	var cmds []*exec.Cmd
	for _, to := range []string{"completed", "aborted"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTerminator$")
		cmd.Env = append(os.Environ(), "WATCHDOG_HELPER_DB="+path, "WATCHDOG_HELPER_TO="+to, "WATCHDOG_HELPER_N="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}
	assertOneTerminalEach(t, st, n)
}

// TestHelperTerminator is the body of the helper process above; it does
// nothing in a normal test run.
func TestHelperTerminator(t *testing.T) {
	path := os.Getenv("WATCHDOG_HELPER_DB")
	if path == "" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv("WATCHDOG_HELPER_N"))
	to := os.Getenv("WATCHDOG_HELPER_TO")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &Writer{Store: st, Now: time.Now}
	var r *state.StateReason
	actor := ActorOrchestrator
	if to == "aborted" {
		r, actor = reason(state.SystemHealthProcessDeadNoTerminal), ActorReaper
	}
	for i := 0; i < n; i++ {
		id := i
		if to == "aborted" {
			id = n - 1 - i
		}
		_, err := w.Transition(context.Background(), Request{Type: "session", ID: fmt.Sprintf("s%04d", id), To: to, ExpectFrom: "running", Reason: r, Actor: actor})
		if err != nil && !errors.Is(err, ErrConflict) {
			t.Fatalf("entity %d: %v", id, err)
		}
	}
}
