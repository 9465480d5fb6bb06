package e2e

// Issue 14, observations 5, 6 and 8, replayed against the built daemon:
// what the health segment, the messages and the heartbeat judgement say
// must stay true as time passes.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/wire"
)

// reasonOf finds the entity's reason with code.
func reasonOf(e wire.Entity, code state.ReasonCode) (state.StateReason, bool) {
	for _, r := range e.State.Reasons {
		if r.Code == code {
			return r, true
		}
	}
	return state.StateReason{}, false
}

// ageHeartbeat sets the heartbeat file's mtime to at.
func ageHeartbeat(t *testing.T, file string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(file, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestTruthObs5HealthSegments: an entity the watchdog ended because its
// process died reads "Aborted · Process dead" sweep after sweep, never
// "Aborted · Infra OK"; a show and a queued play, which have no process
// or heartbeat to judge, never read "Infra OK".
func TestTruthObs5HealthSegments(t *testing.T) {
	d := truthStart(t, "")
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s5","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)))
	d.register(t, `{"type":"show","id":"sh5"}`)
	d.register(t, `{"type":"play","id":"p5","lifecycle":"queued"}`)
	d.register(t, `{"type":"team","id":"t5","lifecycle":"active"}`)
	d.register(t, fmt.Sprintf(`{"type":"schedule","id":"c5","lifecycle":"enabled","schedule":{"cron":"@every 1h","last_fired_at":%d}}`, time.Now().Unix()))

	testenv.Eventually(t, "the session ended for its dead process", ceiling, func() (bool, string) {
		e := d.must(t, "session", "s5")
		return e.Lifecycle != nil && *e.Lifecycle == "aborted", e.Display
	})
	d.assertCountsAgree(t)
	// Several sweeps (one a second) judge the ended entity again: each
	// must leave the death in place. Watched through four real sweeps
	// and four seconds, however slow the machine makes them.
	d.holds(t, "sweep", 4, 4*time.Second, func() {
		e := d.must(t, "session", "s5")
		if e.Display != "Aborted · Process dead" || e.State.Health != state.HealthProcessDead {
			t.Fatalf("ended for its dead process, it reads %q (health %s)", e.Display, e.State.Health)
		}
	})
	for _, ref := range [][2]string{{"show", "sh5"}, {"play", "p5"}, {"team", "t5"}, {"schedule", "c5"}} {
		e := d.must(t, ref[0], ref[1])
		if strings.Contains(e.Display, "Infra OK") {
			t.Errorf("%s/%s has no process to judge but reads %q", ref[0], ref[1], e.Display)
		}
	}
	d.assertCountsAgree(t)
}

// TestTruthObs6MessagesCarryTimestamps: a stalled session's message names
// the moment of its last heartbeat and shows its age as read; a zombie's
// "(zombie)" is rewritten once the zombie is reaped.
func TestTruthObs6MessagesCarryTimestamps(t *testing.T) {
	// A long terminal_grace: the zombie's session must stay open with its
	// death finding in view (an end for a dead process subsumes it).
	d := truthStart(t, strings.NewReplacer("terminal_grace: 1s", "terminal_grace: 1h", "phantom_after: 3s", "phantom_after: 2h").Replace(truthSections))
	dir := t.TempDir()
	hb := filepath.Join(dir, "s6.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sleeper := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s6","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, sleeper.Process.Pid, hb))
	// The last heartbeat, after the registration (from which a heartbeat
	// ages at the earliest), to the millisecond as the store keeps it.
	last := time.Now().Truncate(time.Millisecond)
	ageHeartbeat(t, hb, last)
	zombie := testenv.Zombie(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"z6","lifecycle":"running","pid":%d}`, zombie))

	var first state.StateReason
	testenv.Eventually(t, "the session judged stalled", ceiling, func() (bool, string) {
		e := d.must(t, "session", "s6")
		r, ok := reasonOf(e, state.RunHealthStalled)
		first = r
		return ok, e.Display
	})
	d.assertCountsAgree(t)
	stored := "stalled after 2s without a heartbeat; none since " + state.Stamp(last)
	if !strings.HasPrefix(first.Message, stored+", ") || !strings.HasSuffix(first.Message, " ago") || !first.Since.Equal(last) {
		t.Fatalf("stalled reason %q since %v; want %q with its age, since %v", first.Message, first.Since, stored, last)
	}
	// The message as read later is the same fact with its age as of then:
	// the age must change as time passes, never the moment.
	testenv.Eventually(t, "the age read anew", ceiling, func() (bool, string) {
		r, _ := reasonOf(d.must(t, "session", "s6"), state.RunHealthStalled)
		return strings.HasPrefix(r.Message, stored+", ") && r.Message != first.Message, r.Message
	})

	testenv.Eventually(t, "the zombie judged", ceiling, func() (bool, string) {
		e := d.must(t, "session", "z6")
		r, _ := reasonOf(e, state.RunHealthProcessDead)
		return strings.Contains(r.Message, "(zombie)"), fmt.Sprint(e.State.Reasons)
	})
	var ws unix.WaitStatus
	if _, err := unix.Wait4(zombie, &ws, 0, nil); err != nil {
		t.Fatalf("reap the zombie %d: %v", zombie, err)
	}
	testenv.Eventually(t, "the reaped zombie's message rewritten", ceiling, func() (bool, string) {
		e := d.must(t, "session", "z6")
		for _, r := range e.State.Reasons {
			if strings.Contains(r.Message, "zombie") {
				return false, r.Message
			}
		}
		r, ok := reasonOf(e, state.RunHealthProcessDead)
		return ok && strings.Contains(r.Message, "(no such process)"), fmt.Sprint(e.State.Reasons)
	})
	d.assertCountsAgree(t)
}

// TestTruthObs8WaitingAgentsAndRestarts: an agent idle for input is not
// stalled however old its heartbeat; an agent restarted (failed →
// starting) ages its heartbeat from the restart, not from the silence of
// the process before.
func TestTruthObs8WaitingAgentsAndRestarts(t *testing.T) {
	// Wide thresholds for the restart: the first look after it comes well
	// inside idle_after however slow the machine.
	sections := strings.NewReplacer("idle_after: 1s", "idle_after: 20s", "stalled_after: 2s", "stalled_after: 40s").Replace(truthSections)
	d := truthStart(t, sections)
	dir := t.TempDir()

	// The waiting agent: busy with a fresh heartbeat, then idle, then its
	// heartbeat file far past stalled_after.
	hbA := filepath.Join(dir, "a8.hb")
	if err := os.WriteFile(hbA, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.register(t, fmt.Sprintf(`{"type":"agent","id":"a8","lifecycle":"busy","pid":%d,"heartbeat_file":%q}`, testenv.Sleep(t).Process.Pid, hbA))
	if code, body := d.transition(t, "agent", "a8", `{"to":"idle","trigger":"result_received"}`); code != 200 {
		t.Fatalf("busy → idle: %d %s", code, body)
	}
	ageHeartbeat(t, hbA, time.Now().Add(-2*time.Hour))
	aged := time.Now()

	// The restarted agent: its heartbeat an hour old, failed, restarted.
	hbB := filepath.Join(dir, "b8.hb")
	if err := os.WriteFile(hbB, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ageHeartbeat(t, hbB, time.Now().Add(-time.Hour))
	d.register(t, fmt.Sprintf(`{"type":"agent","id":"b8","lifecycle":"busy","pid":%d,"heartbeat_file":%q}`, testenv.Sleep(t).Process.Pid, hbB))
	if code, body := d.transition(t, "agent", "b8", `{"to":"failed","trigger":"process_crashed","reason":{"code":"agent.failed.process_crashed"}}`); code != 200 {
		t.Fatalf("busy → failed: %d %s", code, body)
	}
	if code, body := d.transition(t, "agent", "b8", `{"to":"starting","trigger":"restart"}`); code != 200 {
		t.Fatalf("failed → starting: %d %s", code, body)
	}
	testenv.Eventually(t, "the restarted agent judged alive, aged from its restart", ceiling, func() (bool, string) {
		e := d.must(t, "agent", "b8")
		return e.Display == "Starting · Alive", e.Display
	})

	// Meanwhile sweeps (one a second) have judged the idle agent's stale
	// heartbeat; a few more pass before it is read: three seconds after
	// the ageing and three more runs, however slow the machine.
	d.holds(t, "sweep", 3, time.Until(aged.Add(3*time.Second)), func() {})
	e := d.must(t, "agent", "a8")
	if e.State.Severity == state.SeverityCritical || e.State.Health == state.HealthStalled || e.State.Health == state.HealthIdle {
		t.Fatalf("an agent idle for input reads %q (%s, health %s)", e.Display, e.State.Severity, e.State.Health)
	}
	d.assertCountsAgree(t)
}

// TestTruthEndedByItsOwnerReadsItsEnd: a job run through `watchdog exec
// --server` that exits 0 at once reads Completed, neutral, within moments,
// however its exit and its end raced at the daemon (the exit seen first
// left "Completed · Process dead", critical, until the next sweep; the end
// first left "Completed · Alive"). The sweep is hourly here, so only the
// daemon's judgement at the end can make it so.
func TestTruthEndedByItsOwnerReadsItsEnd(t *testing.T) {
	sections := strings.Replace(truthSections, `sweep: "@every 1s"`, `sweep: "@every 1h"`, 1)
	d := truthStart(t, sections)
	ids := []string{"x1", "x2", "x3", "x4", "x5", "x6"}
	for _, id := range ids {
		r := rmtRun(t, t.TempDir(), nil, "", "exec", "--id", id, "--server", d.base, "--", "sleep", "0.2")
		if r.code != 0 {
			t.Fatalf("exec %s: %d %s", id, r.code, r.stderr)
		}
	}
	for _, id := range ids {
		testenv.Eventually(t, "session "+id+" reads its end", ceiling, func() (bool, string) {
			e := d.must(t, "session", id)
			return e.State.Lifecycle == "completed" && e.State.Severity == state.SeverityNeutral && e.State.Health == state.HealthOK,
				fmt.Sprintf("%s (health %s, severity %s)", e.Display, e.State.Health, e.State.Severity)
		})
	}
	d.assertCountsAgree(t)
	if q := d.queue(t, ""); q.Total != 0 {
		t.Fatalf("clean ends in the queue: %+v", q.Items)
	}
}
