package e2e

// Every number in range or refused, end to end: the built daemon over
// HTTP on 127.0.0.1 and the built CLI, against a real SQLite store. An
// out-of-range number is one refusal naming the field and the range and
// quoting the number as sent, and the store is as it was.

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rgState is what a refused write must leave as it was: every registered
// number of the entities, the audit trail and the dismissals.
func rgState(t *testing.T, db string) string {
	t.Helper()
	h := svOpenRO(t, db)
	defer h.Close()
	var b strings.Builder
	rows, err := h.Query(`SELECT type, id, COALESCE(pid, 0), COALESCE(pid_start_time, 0),
		COALESCE(supervisor_pid, 0), COALESCE(supervisor_start_time, 0), COALESCE(timeout_seconds, 0)
		FROM entities ORDER BY type, id`)
	if err != nil {
		t.Fatalf("read entities: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, id string
		var pid, spid int64
		var start, sstart, timeout float64
		if err := rows.Scan(&typ, &id, &pid, &start, &spid, &sstart, &timeout); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s/%s pid %d@%v supervisor %d@%v timeout %v\n", typ, id, pid, start, spid, sstart, timeout)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var dismissals int
	if err := h.QueryRow(`SELECT COUNT(*) FROM attention_dismissals`).Scan(&dismissals); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%d dismissals; audit %s", dismissals, svAuditSummary(t, db))
	return b.String()
}

func TestNumbersOutOfRangeRefusedEndToEnd(t *testing.T) {
	t.Parallel()
	dir, db, cfg := svSetup(t, svConfig{})
	d := svStart(t, cfg, db)
	p := svSleep(t)
	// A live process, registered with its real start time by the write
	// path: re-registering it with a start time of 1e18 used to store
	// 2003764205206.8967 and read run.health.pid_reused (critical).
	if code, body, err := d.stPost("/api/v1/entities", fmt.Sprintf(`{"type":"session","id":"s-1","lifecycle":"running","pid":%d,"timeout_seconds":900}`, p.pid)); err != nil || code != 201 {
		t.Fatalf("register: %d %s %v", code, body, err)
	}
	before := rgState(t, db)

	for _, c := range []struct{ name, path, body, says string }{
		{"pid_start_time 1e18", "/api/v1/entities",
			fmt.Sprintf(`{"type":"session","id":"s-1","lifecycle":"running","pid":%d,"pid_start_time":1e18}`, p.pid),
			"pid_start_time: 1e18 is out of range: want Unix seconds from 946684800 (2000-01-01T00:00:00Z) to "},
		{"pid_start_time 9.3e18 on a new entity", "/api/v1/entities",
			fmt.Sprintf(`{"type":"session","id":"s-2","pid":%d,"pid_start_time":9.3e18}`, p.pid),
			"pid_start_time: 9.3e18 is out of range"},
		{"timeout_seconds 1e18", "/api/v1/entities",
			`{"type":"session","id":"s-1","timeout_seconds":1e18}`,
			"timeout_seconds: 1e18 is out of range: want seconds from 1 to 31536000 (365 days), or 0 for none"},
		{"snooze until 1e300", "/api/attention/snooze",
			`{"fingerprint":"session:s-1:run.health.stalled","until":1e300}`,
			"until: 1e300 is out of range: want Unix seconds after "},
	} {
		code, body, err := d.stPost(c.path, c.body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if code != 422 || !strings.Contains(body, `"cause":"over_limit"`) || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s, want 422 over_limit saying %q", c.name, code, body, c.says)
		}
		if after := rgState(t, db); after != before {
			t.Errorf("%s changed the store:\nbefore %s\nafter  %s", c.name, before, after)
		}
	}

	// The CLI: one line on stderr, exit 1, nothing written, whether it
	// writes into the database or through the daemon.
	tokenEnv := "WATCHDOG_TOKEN_FILE=" + filepath.Join(dir, "watchdog.token")
	doc := fmt.Sprintf(`{"type":"session","id":"s-1","pid":%d,"pid_start_time":1e18}`, p.pid)
	for _, c := range []struct {
		name, stdin string
		args        []string
		code        int
		says        string
	}{
		{"register --db", doc, []string{"register", "--json", "-", "--db", db}, 1, "pid_start_time: 1e18 is out of range"},
		{"register --server", doc, []string{"register", "--json", "-", "--server", d.base}, 1, "pid_start_time: 1e18 is out of range"},
		{"register timeout --server", `{"type":"session","id":"s-1","timeout_seconds":1e18}`, []string{"register", "--json", "-", "--server", d.base}, 1, "timeout_seconds: 1e18 is out of range"},
		{"transition --timeout-seconds", "", []string{"transition", "session/s-1", "timed_out", "--reason", "run.timed_out.deadline", "--timeout-seconds", "1e18", "--server", d.base}, 2, "--timeout-seconds: 1e18 is out of range"},
		{"snooze --for", "", []string{"snooze", "session:s-1:run.health.stalled", "--for", "1e300d", "--server", d.base}, 2, "--for: 1e300d is out of range"},
	} {
		cmd := exec.Command(binPath, c.args...)
		cmd.Env = svEnv(tokenEnv)
		cmd.Stdin = strings.NewReader(c.stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		stderr := strings.TrimSuffix(errb.String(), "\n")
		if code != c.code || strings.Contains(stderr, "\n") || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line saying %q", c.name, code, errb.String(), c.code, c.says)
		}
		if after := rgState(t, db); after != before {
			t.Errorf("%s changed the store:\nbefore %s\nafter  %s", c.name, before, after)
		}
	}

	// The live process still reads as itself, not as a reused pid.
	e := d.waitEntity("session", "s-1", "seen running", func(e svEntity) bool { return e.State.Health == "running" })
	if e.hasReason("run.health.pid_reused") {
		t.Errorf("s-1 reads pid_reused: %s", e)
	}
}
