package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// attnStore builds a database with a known queue: a failed run and the
// same stall on a session and an invocation (critical), an idle session
// (warning), and a completed one that needs nobody.
func attnStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "watchdog.db")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st}
	reg := func(typ, id string) {
		running := "running"
		if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: typ, ID: id, Label: "job " + id, Lifecycle: &running}, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	observe := func(typ, id string, h state.Health, code state.ReasonCode) {
		cur, err := st.Get(ctx, typ, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecordObservation(ctx, typ, id, store.Observation{Health: h, Delivery: state.DeliveryNotExpected,
			Reasons: []state.StateReason{state.Observed(code, "seen: "+string(code))}, SeenSeq: cur.LastSeq, At: cur.UpdatedAt.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s-fail", "s-stall", "s-idle", "s-done"} {
		reg("session", id)
	}
	reg("invocation", "i-stall")
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "s-fail", To: "failed", Actor: transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: state.RunFailedExitNonzero, Message: "exited with code 3"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "s-done", To: "completed", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	observe("session", "s-stall", state.HealthStalled, state.RunHealthStalled)
	observe("invocation", "i-stall", state.HealthStalled, state.RunHealthStalled)
	observe("session", "s-idle", state.HealthIdle, state.RunHealthIdle)
	return path
}

func attnRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"attention"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestAttentionCommand(t *testing.T) {
	db := attnStore(t)
	code, out, errs := attnRun("--db", db)
	if code != 0 || !onlyJudgeLines(errs) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"ATTENTION QUEUE · 4 items",
		"CRITICAL · 3 items",
		"  run.health.stalled · 2 items",
		"  run.failed.exit_nonzero · 1 item",
		// Each row starts with the fingerprint snooze and dismiss take.
		"    session:s-fail:run.failed.exit_nonzero  ",
		"exited with code 3",
		"WARNING · 1 item",
		"  run.health.idle · 1 item",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "CRITICAL") > strings.Index(out, "WARNING") || strings.Contains(out, "s-done") || strings.Contains(out, "INFO") {
		t.Errorf("order or content wrong:\n%s", out)
	}
	// Both stalled entities sit under their one cluster header.
	stall := out[strings.Index(out, "run.health.stalled"):]
	stall = stall[:strings.Index(stall, "run.failed.exit_nonzero")]
	if !strings.Contains(stall, "session:s-stall:run.health.stalled") || !strings.Contains(stall, "invocation:i-stall:run.health.stalled") {
		t.Errorf("cluster does not hold both stalls:\n%s", out)
	}

	// --json is the API's shape.
	code, out, _ = attnRun("--db", db, "--json")
	var q attention.Queue
	if err := json.Unmarshal([]byte(out), &q); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if q.Total != 4 || len(q.Items) != 4 || q.BySeverity[state.SeverityCritical] != 3 || q.Items[0].ClusterSize == 0 {
		t.Errorf("--json queue: %+v", q)
	}

	code, out, _ = attnRun("--db", db, "--severity", "warning")
	if code != 0 || !strings.Contains(out, "ATTENTION QUEUE · 1 item") || strings.Contains(out, "CRITICAL") {
		t.Errorf("--severity warning: exit %d\n%s", code, out)
	}
	code, out, _ = attnRun("--db", db, "--limit", "1")
	if code != 0 || !strings.Contains(out, "(showing the first 1; raise --limit for more)") || strings.Count(out, " ago ") != 1 {
		t.Errorf("--limit 1: exit %d\n%s", code, out)
	}
}

func TestAttentionCommandDismissed(t *testing.T) {
	db := attnStore(t)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	err = st.UpsertDismissal(ctx, store.Dismissal{Fingerprint: "session:s-idle:run.health.idle", EntityType: "session", EntityID: "s-idle",
		ReasonCode: "run.health.idle", StatusAtDismissal: "running", DismissedAt: unixAt(1), ClearOnStatusChange: true})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, out, _ := attnRun("--db", db)
	if strings.Contains(out, "s-idle") || !strings.Contains(out, "ATTENTION QUEUE · 3 items") {
		t.Errorf("dismissed item shown:\n%s", out)
	}
	_, out, _ = attnRun("--db", db, "--include-dismissed")
	if !strings.Contains(out, "[dismissed]") || !strings.Contains(out, "s-idle") {
		t.Errorf("--include-dismissed:\n%s", out)
	}
}

func TestAttentionCommandErrors(t *testing.T) {
	db := attnStore(t)
	cases := []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--db", db, "--severity", "dire"}, 2, "--severity"},
		{[]string{"--db", db, "--severity", "neutral"}, 2, "critical, warning, info"},
		{[]string{"--db", db, "--limit", "0"}, 2, "--limit 0"},
		{[]string{"--db", db, "--limit", "501"}, 2, "--limit 501"},
		{[]string{"--db", db, "--failure-window", "-1h"}, 2, "--failure-window"},
		{[]string{"--db", db, "extra"}, 2, "unknown command"},
		{[]string{"--db", filepath.Join(t.TempDir(), "missing.db")}, 1, "no database at"},
	}
	for _, c := range cases {
		code, out, errs := attnRun(c.args...)
		if code != c.code || !strings.Contains(errs, c.says) || strings.Count(strings.TrimSpace(errs), "\n") != 0 || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", c.args, code, out, errs, c.code, c.says)
		}
	}
}

func TestAttentionCommandEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, _ := attnRun("--db", path)
	if code != 0 || strings.TrimSpace(out) != "attention queue is empty" {
		t.Errorf("empty: exit %d %q", code, out)
	}
	code, out, _ = attnRun("--db", path, "--json")
	var q attention.Queue
	if err := json.Unmarshal([]byte(out), &q); code != 0 || err != nil || q.Total != 0 || q.Items == nil {
		t.Errorf("empty --json: exit %d %v %q", code, err, out)
	}
}

// TestAttentionCommandTakesTheDaemonConfig: --config reads the daemon's
// store.dsn and thresholds.failure_window, so the command prints the queue
// the daemon serves; --failure-window still wins when given.
func TestAttentionCommandTakesTheDaemonConfig(t *testing.T) {
	db := attnStore(t)
	t.Setenv("WATCHDOG_DB", "")
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("store:\n  dsn: "+db+"\nthresholds:\n  failure_window: 1ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the failure ended longer ago than the window
	fingerprints := func(args ...string) string {
		t.Helper()
		code, out, errOut := attnRun(append(args, "--json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var q attention.Queue
		if err := json.Unmarshal([]byte(out), &q); err != nil {
			t.Fatal(err)
		}
		var fps []string
		for _, it := range q.Items {
			fps = append(fps, it.Fingerprint)
		}
		return strings.Join(fps, " ")
	}
	const failed = "session:s-fail:run.failed.exit_nonzero"
	if got := fingerprints("--config", cfg); strings.Contains(got, failed) || !strings.Contains(got, "session:s-stall:run.health.stalled") {
		t.Errorf("with the daemon's 1ms failure window from its config: %s", got)
	}
	if got := fingerprints("--config", cfg, "--failure-window", "24h"); !strings.Contains(got, failed) {
		t.Errorf("--failure-window 24h over the config's: %s", got)
	}
	if code, _, errOut := attnRun("--config", filepath.Join(t.TempDir(), "absent.yaml")); code == 0 || !strings.Contains(errOut, "absent.yaml") {
		t.Errorf("a missing config: exit %d %q", code, errOut)
	}
}

// TestAttentionCommandHeartbeat: `attention --db` gives each item the
// heartbeat its entity is judged by, read at the command: this host's
// heartbeat file (a real file, stat'ed) when it is the later, another
// host's entity's posted one; nothing for an entity with neither. The
// line of a heartbeat finding (stalled) shows its age and source as
// status's HEARTBEAT column does; the line of another reason does not,
// though its JSON carries it.
func TestAttentionCommandHeartbeat(t *testing.T) {
	t.Setenv("WATCHDOG_HOST_ID", "here")
	path := filepath.Join(t.TempDir(), "watchdog.db")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	hb := filepath.Join(t.TempDir(), "s.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second) // whole seconds: the JSON keeps microseconds
	touched, posted := now.Add(-5*time.Second), now.Add(-4*time.Minute)
	if err := os.Chtimes(hb, touched, touched); err != nil {
		t.Fatal(err)
	}
	w := &transitions.Writer{Store: st}
	running := "running"
	for _, ent := range []struct {
		e    store.Entity
		h    state.Health
		code state.ReasonCode
	}{
		{store.Entity{Type: "session", ID: "here-1", HostID: "here", HeartbeatFile: hb}, state.HealthStalled, state.RunHealthStalled},
		{store.Entity{Type: "session", ID: "there-1", HostID: "there", HeartbeatFile: hb}, state.HealthStalled, state.RunHealthStalled},
		{store.Entity{Type: "session", ID: "none-1", HostID: "here"}, state.HealthStalled, state.RunHealthStalled},
		{store.Entity{Type: "session", ID: "dead-1", HostID: "here", HeartbeatFile: hb}, state.HealthProcessDead, state.RunHealthProcessDead},
	} {
		ent.e.Lifecycle = &running
		if _, err := w.Register(ctx, transitions.Registration{Entity: ent.e, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
		if ent.e.HeartbeatFile != "" {
			if err := st.RecordHeartbeat(ctx, "session", ent.e.ID, posted, ""); err != nil {
				t.Fatal(err)
			}
		}
		cur, err := st.Get(ctx, "session", ent.e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecordObservation(ctx, "session", ent.e.ID, store.Observation{Health: ent.h, Delivery: state.DeliveryNotExpected,
			Reasons: []state.StateReason{state.Observed(ent.code, "seen: "+string(ent.code))}, SeenSeq: cur.LastSeq, At: cur.UpdatedAt.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, out, errs := attnRun("--db", path, "--json")
	var q attention.Queue
	if err := json.Unmarshal([]byte(out), &q); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v, stderr %q\n%s", code, err, errs, out)
	}
	got := map[string]*state.JudgedHeartbeat{}
	for _, it := range q.Items {
		got[it.Entity.ID] = it.Heartbeat
	}
	for id, want := range map[string]*state.JudgedHeartbeat{
		"here-1":  {At: unixtime.Of(touched), Source: state.HeartbeatSourceFile},
		"there-1": {At: unixtime.Of(posted), Source: state.HeartbeatSourcePosted},
		"dead-1":  {At: unixtime.Of(touched), Source: state.HeartbeatSourceFile},
		"none-1":  nil,
	} {
		h, ok := got[id]
		switch {
		case !ok:
			t.Errorf("no item for %s:\n%s", id, out)
		case want == nil && h != nil:
			t.Errorf("%s shows %+v, want none", id, h)
		case want != nil && (h == nil || h.Source != want.Source || !h.At.Equal(want.At.Time)):
			t.Errorf("%s shows %+v, want %+v", id, h, want)
		}
	}
	if n := strings.Count(out, `"heartbeat":`); n != 3 {
		t.Errorf("%d items carry a heartbeat, want 3 (none-1 leaves it out):\n%s", n, out)
	}

	code, out, _ = attnRun("--db", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	lineOf := func(id string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "session:"+id+":") {
				return l
			}
		}
		t.Fatalf("no line for %s:\n%s", id, out)
		return ""
	}
	for id, want := range map[string]string{
		"here-1":  `seen: run.health.stalled · last heartbeat [56]s ago \(file\)$`,
		"there-1": `seen: run.health.stalled · last heartbeat 4m ago \(posted\)$`,
		"none-1":  `seen: run.health.stalled$`,
		"dead-1":  `seen: run.health.process_dead$`,
	} {
		if l := lineOf(id); !regexp.MustCompile(want).MatchString(l) {
			t.Errorf("%s's line %q does not match %q", id, l, want)
		}
	}
}

// TestTextOutputNeverRawControl (issue 37): a reason's message holding
// ESC, BEL and OSC sequences is printed escaped by attention and status,
// text and JSON alike, and no raw control byte reaches the terminal.
func TestTextOutputNeverRawControl(t *testing.T) {
	path := filepath.Join(t.TempDir(), "watchdog.db")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w := &transitions.Writer{Store: st}
	running := "running"
	if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: "c", Lifecycle: &running}, Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	msg := "boom \x1b[31mRED\x07 \x1b]0;title\x07 \u009b2J del\x7f"
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "c", To: "failed", Actor: transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: state.RunFailedExitNonzero, Message: msg, Evidence: []state.EvidenceRef{{Kind: state.EvidenceToolResult, Detail: "stderr \x1b[2J"}}}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, args := range [][]string{
		{"attention", "--db", path},
		{"attention", "--db", path, "--json"},
		{"status", "--db", path},
		{"status", "--db", path, "--json"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, errb.String())
		}
		for _, b := range [][]byte{out.Bytes(), errb.Bytes()} {
			for i, c := range b {
				if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
					t.Errorf("%v: raw control byte %#x at %d: %q", args, c, i, b[max(0, i-20):min(len(b), i+20)])
					break
				}
			}
			if bytes.Contains(b, []byte("\u009b")) {
				t.Errorf("%v: raw C1 control U+009B in %q", args, b)
			}
		}
		if args[len(args)-1] == "--json" {
			if !strings.Contains(out.String(), `\u001b[31mRED\u0007`) {
				t.Errorf("%v: the message's escapes are not JSON's: %s", args, out.String())
			}
			continue
		}
		if args[0] == "attention" && !strings.Contains(out.String(), `boom \u001b[31mRED\u0007 \u001b]0;title\u0007 \u009b2J del\u007f`) {
			t.Errorf("%v: the message is not shown escaped:\n%s", args, out.String())
		}
	}
}
