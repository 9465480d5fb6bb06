package e2e

// Issue 14's write-path observations (2, 3, 11) replayed against the
// built daemon: re-registration keeps what the watchdog keeps, a
// terminal transition carries its delivery, and a signal reads alike
// across types.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/state"
)

// TestTruthObs2ReRegistrationKeepsTheAge: an orchestrator that upserts
// its document again must not revive a stalled entity. Two sessions,
// one with an old heartbeat file and one that never sent a heartbeat
// (its age counts from its start), are stalled; registered again with
// the very same document, each stays stalled with the same started_at
// and health_since.
func TestTruthObs2ReRegistrationKeepsTheAge(t *testing.T) {
	// Sessions are required to heartbeat from their start here: one that
	// never did ages from its start (issue 39: without the requirement it
	// is judged on liveness alone).
	d := truthStart(t, strings.Replace(truthSections, "jobs:", "  require_heartbeat: [session]\njobs:", 1))
	p := testenv.Sleep(t).Process.Pid
	hb := filepath.Join(t.TempDir(), "s.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(hb, old, old); err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{
		"o2-file":  fmt.Sprintf(`{"type":"session","id":"o2-file","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, p, hb),
		"o2-start": fmt.Sprintf(`{"type":"session","id":"o2-start","lifecycle":"running","pid":%d}`, p),
	}
	for _, doc := range docs {
		d.register(t, doc)
	}
	stalled := func(id string) func() (bool, string) {
		return func() (bool, string) {
			e := d.must(t, "session", id)
			return e.State.Health == state.HealthStalled, e.Display
		}
	}
	for id := range docs {
		testenv.Eventually(t, id+" stalled", ceiling, stalled(id))
	}
	d.assertCountsAgree(t)

	before := map[string][2]float64{}
	for id, doc := range docs {
		e := d.must(t, "session", id)
		before[id] = [2]float64{unixtime.Seconds(e.StartedAt.Time), unixtime.Seconds(e.HealthSince.Time)}
		d.register(t, doc)
	}
	// Past idle_after (1s) and one more sweep: a reset age would read
	// Alive at once and Idle a second later, never Stalled. Watched for
	// three seconds and through two real sweeps, however slow.
	d.holds(t, "sweep", 2, 3*time.Second, func() {
		for id := range docs {
			e := d.must(t, "session", id)
			if e.State.Health != state.HealthStalled {
				t.Fatalf("%s re-registered reads %s (%s): the registration revived it", id, e.State.Health, e.Display)
			}
			got := [2]float64{unixtime.Seconds(e.StartedAt.Time), unixtime.Seconds(e.HealthSince.Time)}
			if got != before[id] {
				t.Fatalf("%s re-registered: started_at, health_since %v, were %v", id, got, before[id])
			}
		}
	})
	d.assertCountsAgree(t)
}

// TestTruthObs11SignalsReadAlike: a workflow and a session wrapped by
// `watchdog exec` against the daemon, their child killed by SIGTERM or
// SIGINT as a user or systemd would: each ends cancelled, neutral, with
// the signal's own reason, read over the API, and exec exits 128+N.
func TestTruthObs11SignalsReadAlike(t *testing.T) {
	d := truthStart(t, "")
	cases := []struct {
		typ  string
		sig  syscall.Signal
		code string
	}{
		{"workflow", syscall.SIGTERM, string(state.RunCancelledSigterm)},
		{"workflow", syscall.SIGINT, string(state.RunCancelledSigint)},
		{"session", syscall.SIGTERM, string(state.RunCancelledSigterm)},
		{"session", syscall.SIGINT, string(state.RunCancelledSigint)},
	}
	for i, c := range cases {
		id := fmt.Sprintf("o11-%d", i)
		cmd := exec.Command(binPath, "exec", "--server", d.base, "--type", c.typ, "--id", id, "--timeout", "1h", "--", "sleep", "60")
		cmd.Env = rmtEnv()
		var errb testenv.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		var pid int
		testenv.Eventually(t, id+" registered running", ceiling, func() (bool, string) {
			code, e := d.entity(t, c.typ, id)
			if code != http.StatusOK {
				return false, fmt.Sprintf("GET %d; exec stderr %q", code, errb.String())
			}
			pid = e.PID
			return e.State.Lifecycle == "running" && pid > 0, e.Display
		})
		// The child itself is signalled, as a user's kill or a Ctrl-C
		// reaching the process group would.
		if err := syscall.Kill(pid, c.sig); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(c.sig) {
			t.Fatalf("%s %s: exec ended with %v, want exit %d; stderr %q", c.typ, c.sig, err, 128+int(c.sig), errb.String())
		}
		e := d.must(t, c.typ, id)
		var why string
		if len(e.State.Reasons) > 0 {
			why = string(e.State.Reasons[0].Code)
		}
		if e.State.Lifecycle != "cancelled" || why != c.code {
			t.Errorf("%s killed by %s ended %s with %s (%s); want cancelled with %s", c.typ, c.sig, e.State.Lifecycle, why, e.Display, c.code)
		}
		// The running judgement goes once the daemon has seen the
		// process gone; what stays is the end, which is no problem.
		testenv.Eventually(t, id+" neutral", ceiling, func() (bool, string) {
			e := d.must(t, c.typ, id)
			return e.State.Severity == state.SeverityNeutral, fmt.Sprintf("%s (%s)", e.State.Severity, e.Display)
		})
	}
	d.assertCountsAgree(t)
}

// TestTruthObs3ContractAtTheEnd: the artifact contract is judged at the
// moment of the end, inside the write path. A workflow whose required
// artifact is missing cannot become completed (422 over HTTP, a non-zero
// exit and one line from the CLI, nothing changed); its orchestrator then
// sends failed, and the end is recorded with its delivery at once. A
// workflow whose contract passes completes with delivery passed; a
// session, which is not guarded, completes with its true delivery
// recorded with its end (Completed · Artifacts missing, critical). The
// sweep runs hourly here: what is read right after each end is the write
// path's own record.
func TestTruthObs3ContractAtTheEnd(t *testing.T) {
	d := truthStart(t, strings.Replace(truthSections, `sweep: "@every 1s"`, `sweep: "@every 1h"`, 1))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "ok.txt"), []byte("done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testenv.Sleep(t).Process.Pid
	doc := func(typ, id, artifact string) string {
		return fmt.Sprintf(`{"type":%q,"id":%q,"lifecycle":"running","pid":%d,"artifacts_root":%q,"artifacts":[{"path":%q,"required":true}]}`, typ, id, p, root, artifact)
	}
	d.register(t, doc("workflow", "o3-missing", "a.txt"))
	d.register(t, doc("workflow", "o3-ok", "ok.txt"))
	d.register(t, doc("session", "o3-session", "a.txt"))
	d.assertCountsAgree(t)

	// completed over a missing artifact: refused, naming it, nothing
	// changed.
	code, body := d.transition(t, "workflow", "o3-missing", `{"to":"completed","actor":"orchestrator"}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "a.txt") {
		t.Fatalf("completed with a.txt missing: %d %s, want 422 naming a.txt", code, body)
	}
	r := wd(t, "", "transition", "workflow/o3-missing", "completed", "--server", d.base)
	if r.code == 0 || !strings.Contains(r.stderr, "a.txt") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("CLI completed with a.txt missing: exit %d, stderr %q; want non-zero and one line naming a.txt", r.code, r.stderr)
	}
	if e := d.must(t, "workflow", "o3-missing"); e.State.Lifecycle != "running" || (e.TransitionsTotal != nil && *e.TransitionsTotal != 1) {
		t.Fatalf("a refused completed changed the workflow: %s, %v transitions", e.State.Lifecycle, e.TransitionsTotal)
	}

	// The orchestrator's answer: failed, recorded with its delivery.
	code, body = d.transition(t, "workflow", "o3-missing", `{"to":"failed","actor":"orchestrator","reason":{"code":"run.failed.artifact_contract","message":"a.txt was not produced"}}`)
	if code != http.StatusOK {
		t.Fatalf("failed: %d %s", code, body)
	}
	ends := []struct {
		typ, id, to string
		delivery    state.Delivery
		severity    state.Severity
		finding     state.ReasonCode
	}{
		// The end's reason subsumes the delivery findings it was based
		// on (one item per cause): the contract reason, not a second one.
		{"workflow", "o3-missing", "failed", state.DeliveryMissing, state.SeverityCritical, state.RunFailedArtifactContract},
		{"workflow", "o3-ok", "completed", state.DeliveryPassed, "", ""},
		{"session", "o3-session", "completed", state.DeliveryMissing, state.SeverityCritical, state.RunDeliveryMissing},
	}
	for _, end := range ends[1:] {
		if code, body := d.transition(t, end.typ, end.id, `{"to":"completed","actor":"orchestrator"}`); code != http.StatusOK {
			t.Fatalf("%s/%s completed: %d %s", end.typ, end.id, code, body)
		}
	}
	for _, end := range ends {
		e := d.must(t, end.typ, end.id)
		var codes []state.ReasonCode
		for _, r := range e.State.Reasons {
			codes = append(codes, r.Code)
		}
		if e.State.Lifecycle != end.to || e.State.Delivery != end.delivery {
			t.Errorf("%s/%s right after its end: %s, delivery %s (%s); want %s, delivery %s", end.typ, end.id, e.State.Lifecycle, e.State.Delivery, e.Display, end.to, end.delivery)
		}
		if end.finding != "" && !slices.Contains(codes, end.finding) {
			t.Errorf("%s/%s: reasons %v lack %s", end.typ, end.id, codes, end.finding)
		}
		if end.finding == state.RunFailedArtifactContract && slices.Contains(codes, state.RunDeliveryMissing) {
			t.Errorf("%s/%s: reasons %v list the delivery finding beside the contract end that subsumes it", end.typ, end.id, codes)
		}
		if end.severity != "" && e.State.Severity != end.severity {
			t.Errorf("%s/%s reads %s (%s), want %s", end.typ, end.id, e.State.Severity, e.Display, end.severity)
		}
	}
	// The chain says so beside the end (its words are the display's:
	// "No a.txt produced" for one artifact, "Artifacts missing" for more).
	if e := d.must(t, "session", "o3-session"); !strings.HasPrefix(e.Display, "Completed") || !strings.Contains(e.Display, "a.txt") && !strings.Contains(e.Display, "Artifacts missing") {
		t.Errorf("session display %q, want Completed with its missing delivery", e.Display)
	}
	d.assertCountsAgree(t)
}
