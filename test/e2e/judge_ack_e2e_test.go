package e2e

// Issue "One judgement, everywhere", observation 7: an incident keeps its
// acknowledgement. A snooze or dismissal of a death carries over to the
// end the reaper records for it (attention.Carries), in the daemon's
// queue, the local store's and the metrics alike; a new death is a new
// item. Against the built binary, with real processes.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
)

// ackSections are truthSections with a terminal_grace long enough that
// the acknowledgement usually lands before the end; the test holds
// either way (an acknowledgement sent after the end, for the finding the
// queue showed, is recorded on its occurrence and carries over too).
// reap_phantoms waits longer, so the end is usually enforce_terminal's
// (process_dead_no_terminal); a phantom's end (phantom_process_dead)
// subsumes the death alike, and is accepted.
//
// The failure window is an hour: the ended sessions' items must still be
// in the queue when the test looks again after a third death, however
// long a loaded host takes over it (with truthSections' 4s they aged out
// under load, and the last check found nothing to check).
var ackSections = strings.NewReplacer("terminal_grace: 1s", "terminal_grace: 3s", "phantom_after: 3s", "phantom_after: 30s", "failure_window: 4s", "failure_window: 1h").Replace(truthSections)

// cliQueue is `watchdog attention --json` with args (its target and
// flags), decoded.
func cliQueue(t *testing.T, args ...string) attention.Queue {
	t.Helper()
	r := wd(t, "", append([]string{"attention", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("attention %v: %+v", args, r)
	}
	var q attention.Queue
	if err := json.Unmarshal([]byte(r.stdout), &q); err != nil {
		t.Fatalf("attention %v: %v\n%s", args, err, r.stdout)
	}
	return q
}

// TestJudgeAckCarriesOverEscalation: a dead session's process_dead is
// snoozed (one session, from the CLI through the daemon) or dismissed
// (another, from the CLI on the daemon's store); the reaper then ends
// each for it (process_dead_no_terminal, or phantom_process_dead should
// reap_phantoms come first). Neither is in the queue, through
// the API, `attention --server` or `attention --db`; include_dismissed
// shows the end's item hidden by the acknowledgement it carries
// (dismissed_as). A third session that dies afterwards is a new item,
// shown.
func TestJudgeAckCarriesOverEscalation(t *testing.T) {
	d := truthStart(t, ackSections)
	cases := []struct {
		id   string
		args func(fp string) []string
		// snoozed is whether the acknowledgement has an end.
		snoozed bool
	}{
		{"s-snooze", func(fp string) []string { return []string{"snooze", fp, "--for", "4h", "--server", d.base} }, true},
		{"s-dismiss", func(fp string) []string { return []string{"dismiss", fp, "--db", d.db} }, false},
	}
	for _, c := range cases {
		p := testenv.Sleep(t)
		d.register(t, fmt.Sprintf(`{"type":"session","id":%q,"lifecycle":"running","pid":%d}`, c.id, p.Process.Pid))
		if err := p.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = p.Wait()
		fp := attention.Fingerprint("session", c.id, state.RunHealthProcessDead)
		// The death's item, or already the end's (a slow host): the
		// acknowledgement is sent for the death the queue showed first.
		testenv.Eventually(t, c.id+"'s death in the queue", truthWait, func() (bool, string) {
			its := itemsOf(d.queue(t, ""), "session", c.id)
			return len(its) > 0, d.must(t, "session", c.id).Display
		})
		if r := wd(t, "", c.args(fp)...); r.code != 0 {
			t.Fatalf("%v: %+v", c.args(fp), r)
		}
		if e := d.must(t, "session", c.id); *e.Lifecycle != "running" {
			t.Logf("%s was ended before it was acknowledged (a slow host): the acknowledgement went to the finding the end subsumes", c.id)
		}
	}
	// ends are the reasons the reaper ended each session with: one that
	// subsumes its death (state.Subsumes).
	ends := map[string]state.ReasonCode{}
	for _, c := range cases {
		testenv.Eventually(t, c.id+" ended by the reaper for its death", truthWait, func() (bool, string) {
			e := d.must(t, "session", c.id)
			if *e.Lifecycle != "aborted" || len(e.State.Reasons) == 0 || !state.Subsumes(e.State.Reasons[0].Code, state.RunHealthProcessDead) {
				return false, fmt.Sprint(e.Display, e.State.Reasons)
			}
			ends[c.id] = e.State.Reasons[0].Code
			return true, ""
		})
	}
	assertHidden := func(stage string) {
		t.Helper()
		for _, c := range cases {
			for _, src := range []struct {
				name string
				q    func() attention.Queue
			}{
				{"GET /api/attention", func() attention.Queue { return d.queue(t, "") }},
				{"attention --server", func() attention.Queue { return cliQueue(t, "--server", d.base) }},
				{"attention --db", func() attention.Queue { return cliQueue(t, "--db", d.db) }},
			} {
				if its := itemsOf(src.q(), "session", c.id); len(its) > 0 {
					t.Errorf("%s: %s shows the acknowledged incident of %s: %v", stage, src.name, c.id, codesOf(its))
				}
			}
			fp := attention.Fingerprint("session", c.id, state.RunHealthProcessDead)
			for _, src := range []struct {
				name string
				q    func() attention.Queue
			}{
				{"GET /api/attention?include_dismissed=true", func() attention.Queue { return d.queue(t, "include_dismissed=true") }},
				{"attention --include-dismissed --db", func() attention.Queue { return cliQueue(t, "--include-dismissed", "--db", d.db) }},
			} {
				its := itemsOf(src.q(), "session", c.id)
				if len(its) != 1 {
					t.Errorf("%s: %s: %s has items %v, want the end's one", stage, src.name, c.id, codesOf(its))
					continue
				}
				it := its[0]
				if it.Reason.Code != ends[c.id] || !it.Dismissed || it.DismissedAs != fp {
					t.Errorf("%s: %s: %s's item %s dismissed %v as %q, want %s hidden by the acknowledgement of %s",
						stage, src.name, c.id, it.Reason.Code, it.Dismissed, it.DismissedAs, ends[c.id], fp)
				}
				if left := time.Until(it.SnoozedUntil.Time); c.snoozed != !it.SnoozedUntil.IsZero() || (c.snoozed && (left < 3*time.Hour || left > 5*time.Hour)) {
					t.Errorf("%s: %s: %s snoozed until %v (snooze %v)", stage, src.name, c.id, it.SnoozedUntil, c.snoozed)
				}
			}
		}
		d.assertCountsAgree(t)
	}
	assertHidden("after the end")

	// A new death is a new item: shown at its death and at its end.
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s-new","lifecycle":"running","pid":%d}`, p.Process.Pid))
	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	testenv.Eventually(t, "s-new ended by the reaper and in the queue", truthWait, func() (bool, string) {
		e := d.must(t, "session", "s-new")
		its := itemsOf(d.queue(t, ""), "session", "s-new")
		return *e.Lifecycle == "aborted" && len(its) == 1 && state.Subsumes(its[0].Reason.Code, state.RunHealthProcessDead) && !its[0].Dismissed,
			fmt.Sprint(e.Display, codesOf(its))
	})
	if its := itemsOf(cliQueue(t, "--db", d.db), "session", "s-new"); len(its) != 1 {
		t.Errorf("attention --db: s-new has items %v, want one", codesOf(its))
	}
	// The vacuum (every second here) has run since the ends; the carried
	// acknowledgements stand.
	assertHidden("after a new death")
}

// TestJudgeAckNewOccurrence: a session's death is snoozed; the session is
// re-registered with a new, live process, which then dies too, and the
// reaper ends it. The end is of the second death, not the one snoozed: a
// new item, shown. One-shot commands on a local store (probe --entity,
// reap), so every step happens in the order written.
func TestJudgeAckNewOccurrence(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	cfg := writeFile(t, dir, "cfg.yaml", "thresholds:\n  terminal_grace: 1s\n")
	probeIt := func() {
		t.Helper()
		if r := wd(t, "", "probe", "--entity", "session/again", "--record", "--db", db, "--config", cfg); r.code > 2 {
			t.Fatalf("probe: %+v", r) // 0 to 2: ok, warning, critical
		}
	}
	killedSleep(t, func(pid int) {
		registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"again","lifecycle":"running","pid":%d}`, pid))
	})
	probeIt()
	fp := attention.Fingerprint("session", "again", state.RunHealthProcessDead)
	first, ok := item(cliQueue(t, "--db", db), fp)
	if !ok {
		t.Fatalf("the first death is not in the queue: %v", codesOf(cliQueue(t, "--db", db).Items))
	}
	if r := wd(t, "", "snooze", fp, "--for", "4h", "--db", db); r.code != 0 {
		t.Fatalf("snooze: %+v", r)
	}

	// A new process: alive, the death's finding clears.
	c := testenv.Sleep(t)
	registerE2E(t, db, fmt.Sprintf(`{"type":"session","id":"again","lifecycle":"running","pid":%d}`, c.Process.Pid))
	probeIt()
	if e := entityOf(t, db, "session", "again"); e.Health == state.HealthProcessDead {
		t.Fatalf("the re-registered live process reads %s", e.Health)
	}
	// It dies: a new occurrence, then its end.
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	probeIt()
	waitGrace(t, db, "session", "again", time.Second)
	if r := wd(t, "", "reap", "--db", db, "--config", cfg); r.code != 0 {
		t.Fatalf("reap: %+v", r)
	}
	e := entityOf(t, db, "session", "again")
	if e.LifecycleOr("") != "aborted" || e.TransitionReason == nil || e.TransitionReason.Code != state.SystemHealthProcessDeadNoTerminal {
		t.Fatalf("again: %s %+v", e.LifecycleOr(""), e.TransitionReason)
	}
	if len(e.Reasons) != 1 || !e.Reasons[0].FirstSeen.After(first.FirstSeenAt.Time) {
		t.Fatalf("the second death is not a new occurrence: %+v (first seen %v)", e.Reasons, first.FirstSeenAt)
	}
	its := itemsOf(cliQueue(t, "--db", db), "session", "again")
	if len(its) != 1 || its[0].Reason.Code != state.SystemHealthProcessDeadNoTerminal || its[0].Dismissed {
		t.Fatalf("the second death's end: items %v, want %s shown", codesOf(its), state.SystemHealthProcessDeadNoTerminal)
	}
}
