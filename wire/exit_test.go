package wire

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
)

// TestEntityExitStatus: a real process killed by SIGKILL, its status
// recorded in a real store, reads back on the entity as exit_status and in
// the status table; an entity without one has no exit_status at all.
func TestEntityExitStatus(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cmd := testenv.Sleep(t)
	pid := cmd.Process.Pid
	running := "running"
	now := time.Now()
	for _, id := range []string{"killed", "alive"} {
		if _, err := st.Register(ctx, store.Entity{Type: "session", ID: id, Lifecycle: &running, PID: pid}, "orchestrator", now); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	at := now.Add(time.Second).Truncate(unixtime.Precision)
	killed, err := st.Get(ctx, "session", "killed")
	if err != nil {
		t.Fatal(err)
	}
	o := store.Observation{Health: state.HealthProcessDead, HealthSince: at, DeadSince: at, SeenSeq: killed.LastSeq, At: at,
		Exit: &state.ExitStatus{Signal: int(syscall.SIGKILL), At: at}, PID: pid}
	if _, err := st.RecordObservation(ctx, "session", "killed", o); err != nil {
		t.Fatal(err)
	}

	var list EntityList
	for _, id := range []string{"killed", "alive"} {
		e, err := st.Get(ctx, "session", id)
		if err != nil {
			t.Fatal(err)
		}
		list.Items = append(list.Items, FromEntity(e, nil, nil, now))
	}
	list.GeneratedAt = unixtime.Of(now)

	b, err := json.Marshal(list.Items[0])
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ExitStatus map[string]any `json:"exit_status"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ExitStatus["signal"] != "SIGKILL" || doc.ExitStatus["code"] != nil || doc.ExitStatus["at"] != unixtime.Seconds(at) {
		t.Errorf("exit_status %v, want signal SIGKILL, code null, at %v", doc.ExitStatus, unixtime.Seconds(at))
	}
	if b, _ := json.Marshal(list.Items[1]); strings.Contains(string(b), "exit_status") {
		t.Errorf("an entity with no known exit writes exit_status: %s", b)
	}

	table := list.Table()
	lines := strings.Split(table, "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "killed") || !strings.Contains(lines[1], "(SIGKILL)") || strings.Contains(lines[2], "(") {
		t.Errorf("status table does not show the exit beside the killed entity only:\n%s", table)
	}
}
