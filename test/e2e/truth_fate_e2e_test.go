package e2e

// Issue 14, observations 9 and 12 (fates): who is finished for its
// dependants, and what becomes of every entity whose process died.

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/wire"
)

// truthFateDeadline bounds every wait of these tests: generous, the jobs
// run each second.
const truthFateDeadline = ceiling

// hasReason says whether e's reasons (its transition's and its findings)
// carry code.
func hasReason(e wire.Entity, code state.ReasonCode) bool {
	return slices.ContainsFunc(e.State.Reasons, func(r state.StateReason) bool { return r.Code == code })
}

// TestTruthObs9OutcomeFinishesForDependants: a show that completed (not
// archived) is finished for its team and its live children, and a play
// whose dependency ended without success blocks its dependants.
func TestTruthObs9OutcomeFinishesForDependants(t *testing.T) {
	d := truthStart(t, "")
	child := testenv.Sleep(t)
	d.register(t, `{"type":"show","id":"s-9","lifecycle":"active"}`)
	d.register(t, `{"type":"team","id":"t-9","lifecycle":"active","parent":{"type":"show","id":"s-9"}}`)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"c-9","lifecycle":"running","pid":%d,"parent":{"type":"show","id":"s-9"}}`, child.Process.Pid))
	d.register(t, `{"type":"play","id":"dep-failed","lifecycle":"running"}`)
	d.register(t, `{"type":"play","id":"dep-timed-out","lifecycle":"running"}`)
	d.register(t, `{"type":"play","id":"after-failed","lifecycle":"queued","depends_on":["dep-failed"]}`)
	d.register(t, `{"type":"play","id":"after-timed-out","lifecycle":"planned","depends_on":["dep-timed-out"]}`)
	d.assertCountsAgree(t)
	if e := d.must(t, "team", "t-9"); e.State.Lifecycle != "active" {
		t.Fatalf("team closed while its show was active: %s", e.Display)
	}

	for _, tr := range []struct{ typ, id, body string }{
		{"show", "s-9", `{"to":"completed","actor":"orchestrator"}`},
		{"play", "dep-failed", `{"to":"failed","actor":"orchestrator","reason":{"code":"run.failed.exit_nonzero"}}`},
		{"play", "dep-timed-out", `{"to":"timed_out","actor":"orchestrator","reason":{"code":"run.timed_out.deadline"},"timeout_seconds":60,"elapsed_seconds":61}`},
	} {
		if code, body := d.transition(t, tr.typ, tr.id, tr.body); code != 200 {
			t.Fatalf("%s/%s: %d %s", tr.typ, tr.id, code, body)
		}
	}

	testenv.Eventually(t, "the team of the completed show closed as orphaned", truthFateDeadline, func() (bool, string) {
		e := d.must(t, "team", "t-9")
		return e.State.Lifecycle == "closed" && hasReason(e, state.TeamHealthOrphaned), e.Display + " " + fmt.Sprint(e.State.Reasons)
	})
	// The live child of a finished show is an orphan: judged so, or
	// already reaped as one (phantom_after is short here).
	testenv.Eventually(t, "the live child of the completed show judged orphaned", truthFateDeadline, func() (bool, string) {
		e := d.must(t, "session", "c-9")
		return e.State.Health == state.HealthOrphaned || hasReason(e, state.SystemReaperPhantomOrphaned), e.Display
	})
	for _, tc := range []struct{ id, dep string }{{"after-failed", "dep-failed"}, {"after-timed-out", "dep-timed-out"}} {
		testenv.Eventually(t, tc.id+" blocked by its ended dependency", truthFateDeadline, func() (bool, string) {
			e := d.must(t, "play", tc.id)
			return e.State.Lifecycle == "blocked" && hasReason(e, state.PlayBlockedDependencyFailed), e.Display
		})
	}
	d.assertCountsAgree(t)
}

// TestTruthObs12DeadProcessFate: a play whose process died has no end for
// it in its graph; it is flagged critical in the queue with what to do,
// stays flagged, and `reap --dry-run` lists it, on the daemon's store and
// on one no sweep has seen.
func TestTruthObs12DeadProcessFate(t *testing.T) {
	d := truthStart(t, "")
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"play","id":"p-12","lifecycle":"running","pid":%d}`, p.Process.Pid))
	d.assertCountsAgree(t)
	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()

	fp := attention.Fingerprint("play", "p-12", state.SystemHealthProcessDeadUnowned)
	var flagged attention.Item
	testenv.Eventually(t, "the dead play flagged in the queue", truthFateDeadline, func() (bool, string) {
		q := d.queue(t, "")
		it, ok := item(q, fp)
		flagged = it
		return ok, fmt.Sprint(q.Items)
	})
	if flagged.Severity != state.SeverityCritical {
		t.Errorf("flag severity %s, want critical", flagged.Severity)
	}
	if s := flagged.Reason.Summary; !strings.Contains(s, "dead since") || !strings.Contains(s, "watchdog transition play/p-12 failed") {
		t.Errorf("flag summary %q: want the death's time and the command that records an end", s)
	}
	e := d.must(t, "play", "p-12")
	if e.State.Lifecycle != "running" || e.State.Health != state.HealthProcessDead || !strings.Contains(e.Display, "Process dead") {
		t.Errorf("play/p-12 reads %s (%s/%s): want running, process dead", e.Display, e.State.Lifecycle, e.State.Health)
	}
	for _, r := range e.State.Reasons {
		if r.Code == state.SystemHealthProcessDeadUnowned && r.Since.IsZero() {
			t.Errorf("the flag has no since: %+v", r)
		}
	}
	// The daemon's log says it once, at warning level, naming the entity.
	testenv.Eventually(t, "the flag in the daemon's log", truthFateDeadline, func() (bool, string) {
		for _, line := range strings.Split(d.logs(), "\n") {
			if strings.Contains(line, `"level":"warn"`) && strings.Contains(line, "flagged for the operator") && strings.Contains(line, `"play/p-12"`) {
				return true, ""
			}
		}
		return false, d.logs()
	})
	d.assertCountsAgree(t)

	// Stable: the sweeps of the next seconds (one a second) keep the same
	// item, first sighting unchanged; they do not write it away.
	seen := time.Now()
	testenv.Eventually(t, "several sweeps after the flag", truthFateDeadline, func() (bool, string) {
		return time.Since(seen) > 3*time.Second, ""
	})
	if n := strings.Count(d.logs(), "flagged for the operator"); n != 1 {
		t.Errorf("the flag logged %d times, want once", n)
	}
	again, ok := item(d.queue(t, ""), fp)
	if !ok || again.FirstSeenAt != flagged.FirstSeenAt {
		t.Errorf("the flag did not hold: %v %+v, first %+v", ok, again.FirstSeenAt, flagged.FirstSeenAt)
	}
	d.assertCountsAgree(t)

	cfg := writeFile(t, t.TempDir(), "reap.yaml", truthSections)
	r := wd(t, "", "reap", "--dry-run", "--db", d.db, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "would flag play/p-12") {
		t.Errorf("reap --dry-run on the daemon's store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A store no sweep has seen: the dry run probes first.
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	killedSleep(t, func(pid int) {
		registerE2E(t, fresh, fmt.Sprintf(`{"type":"session","id":"s-12","lifecycle":"running","pid":%d}`, pid))
	})
	killedSleep(t, func(pid int) {
		registerE2E(t, fresh, fmt.Sprintf(`{"type":"play","id":"p-12","lifecycle":"running","pid":%d}`, pid))
	})
	r = wd(t, "", "reap", "--dry-run", "--db", fresh, "--config", cfg)
	if r.code != 0 {
		t.Fatalf("reap --dry-run on a fresh store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// First seen dead by this very probe: each waits its grace, with its
	// fate named.
	for _, want := range []string{"waiting session/s-12 (would end it in aborted)", "waiting play/p-12 (would flag it)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("reap --dry-run on a fresh store does not say %q:\n%s", want, r.stdout)
		}
	}
	for _, id := range [][2]string{{"session", "s-12"}, {"play", "p-12"}} {
		if e := entityOf(t, fresh, id[0], id[1]); !e.DeadSince.IsZero() || e.Health != "" && e.Health != state.HealthUnknown {
			t.Errorf("the dry run wrote %s/%s: health %q, dead since %v", id[0], id[1], e.Health, e.DeadSince)
		}
	}
}

// TestTruthObs12EveryTypeHasAFate: a show, a team and a schedule whose
// process died are flagged like a play (none has an end for a dead
// process), each one critical item that names the command to record an
// end, and `reap --dry-run` lists each.
func TestTruthObs12EveryTypeHasAFate(t *testing.T) {
	d := truthStart(t, "")
	cases := [][2]string{{"show", `"lifecycle":"active"`}, {"team", `"lifecycle":"active"`},
		{"schedule", `"lifecycle":"enabled","schedule":{"cron":"@every 1h","last_fired_at":%d}`}}
	for i, c := range cases {
		p := testenv.Sleep(t)
		doc := c[1]
		if strings.Contains(doc, "%d") {
			doc = fmt.Sprintf(doc, time.Now().Unix())
		}
		d.register(t, fmt.Sprintf(`{"type":%q,"id":"x-%d",%s,"pid":%d}`, c[0], i, doc, p.Process.Pid))
		if err := p.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = p.Wait()
	}
	for i, c := range cases {
		fp := attention.Fingerprint(c[0], fmt.Sprintf("x-%d", i), state.SystemHealthProcessDeadUnowned)
		testenv.Eventually(t, "the dead "+c[0]+" flagged in the queue", truthFateDeadline, func() (bool, string) {
			it, ok := item(d.queue(t, ""), fp)
			return ok && it.Severity == state.SeverityCritical &&
				strings.Contains(it.Reason.Summary, fmt.Sprintf("`watchdog transition %s/x-%d ", c[0], i)), fmt.Sprint(it)
		})
	}
	d.assertCountsAgree(t)
	cfg := writeFile(t, t.TempDir(), "reap.yaml", truthSections)
	r := wd(t, "", "reap", "--dry-run", "--db", d.db, "--config", cfg)
	for i, c := range cases {
		if want := fmt.Sprintf("would flag %s/x-%d", c[0], i); !strings.Contains(r.stdout, want) {
			t.Errorf("reap --dry-run does not say %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}

	// The operator answers: the show fails, the schedule is disabled. The
	// flags are gone at once and do not come back (a failed show keeps its
	// graph open until archived; a disabled schedule's process is not
	// asked for).
	for _, tr := range [][3]string{{"show", "x-0", `{"to":"failed","reason":{"code":"show.failed.critical_path_blocked"},"actor":"orchestrator"}`},
		{"schedule", "x-2", `{"to":"disabled","actor":"orchestrator"}`}} {
		if code, body := d.transition(t, tr[0], tr[1], tr[2]); code != http.StatusOK {
			t.Fatalf("%s/%s: %d %s", tr[0], tr[1], code, body)
		}
	}
	gone := func() (bool, string) {
		q := d.queue(t, "include_dismissed=true")
		for _, id := range [][2]string{{"show", "x-0"}, {"schedule", "x-2"}} {
			if it, ok := item(q, attention.Fingerprint(id[0], id[1], state.SystemHealthProcessDeadUnowned)); ok {
				return false, fmt.Sprint(it)
			}
		}
		return true, ""
	}
	if ok, seen := gone(); !ok {
		t.Fatalf("a flag outlived the operator's answer: %s", seen)
	}
	settle := time.Now()
	testenv.Eventually(t, "several checks after the answers", truthFateDeadline, func() (bool, string) {
		return time.Since(settle) > 4*time.Second, ""
	})
	if ok, seen := gone(); !ok {
		t.Fatalf("a flag came back after the operator's answer: %s", seen)
	}
	d.assertCountsAgree(t)
}

// TestTruthObs12FlagAtTheGrace: the flag comes at the death plus
// terminal_grace, like a session's end, not at the next sweep or
// enforce_terminal run (both hourly here).
func TestTruthObs12FlagAtTheGrace(t *testing.T) {
	sections := strings.NewReplacer(`sweep: "@every 1s"`, `sweep: "@every 1h"`, `enforce_terminal: "@every 1s"`, `enforce_terminal: "@every 1h"`).Replace(truthSections)
	d := truthStart(t, sections)
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"play","id":"p-g","lifecycle":"running","pid":%d}`, p.Process.Pid))
	s := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s-g","lifecycle":"running","pid":%d}`, s.Process.Pid))
	for _, c := range []*exec.Cmd{p, s} {
		if err := c.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = c.Wait()
	}
	fp := attention.Fingerprint("play", "p-g", state.SystemHealthProcessDeadUnowned)
	testenv.Eventually(t, "the play flagged and the session ended at their grace", ceiling, func() (bool, string) {
		_, flagged := item(d.queue(t, ""), fp)
		e := d.must(t, "session", "s-g")
		return flagged && e.State.Lifecycle == "aborted", fmt.Sprint(flagged, " ", e.Display)
	})
	d.assertCountsAgree(t)
}
