package reaper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"watchdog/internal/testenv"
	"watchdog/judge"
	"watchdog/proctree"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// rootShell is a real `sh -c script` whose stdin the test holds: the
// script's `read` lines wait for the test (a line, or the end of input),
// so the root is watched before it forks or exits, with no timing.
type rootShell struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	root  proctree.Root
}

func startShell(t *testing.T, f *fixture, script string) *rootShell {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	_, ticks, err := f.host.StartOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return &rootShell{cmd: cmd, stdin: in, root: proctree.Root{PID: cmd.Process.Pid, StartTicks: ticks}}
}

// exit lets the shell end (its reads see the end of input) and reaps it.
func (s *rootShell) exit(t *testing.T) {
	t.Helper()
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("the root shell: %v", err)
	}
}

// newTree is a process tree in the mode asked for; events mode is skipped
// where the connector cannot be opened (not root, a container).
func newTree(t *testing.T, walk bool) *proctree.Tree {
	t.Helper()
	tr, err := proctree.New(proctree.Options{Walk: walk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if !walk && tr.Mode() != proctree.ModeEvents {
		t.Skipf("the process connector is not available here: %v", tr.Why())
	}
	return tr
}

// waitDescendant waits until root's tree holds a live process named comm
// (walking again in walk mode, as the sweep does) and returns its pid,
// killed at the test's end.
func waitDescendant(t *testing.T, tr *proctree.Tree, root proctree.Root, comm string) int {
	t.Helper()
	var pid int
	testenv.Eventually(t, "a "+comm+" under pid "+fmt.Sprint(root.PID), 10*time.Second, func() (bool, string) {
		if tr.Mode() == proctree.ModeWalk {
			if err := tr.Refresh(); err != nil {
				return false, err.Error()
			}
		}
		ps, err := tr.Descendants(root)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if p.Comm == comm {
				pid = p.PID
				return true, ""
			}
		}
		return false, fmt.Sprint(ps)
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// leftover is e's leftover finding, nil when it has none.
func leftover(e store.Entity) *state.StateReason {
	i := slices.IndexFunc(e.Reasons, func(r state.StateReason) bool { return r.Code == state.RunHealthLeftoverProcesses })
	if i < 0 {
		return nil
	}
	return &e.Reasons[i]
}

// names says whether r's evidence names pid and its command.
func names(r *state.StateReason, pid int, comm string) bool {
	want := fmt.Sprintf("pid %d %s,", pid, comm)
	return slices.ContainsFunc(r.Evidence, func(ev state.EvidenceRef) bool { return strings.HasPrefix(ev.Detail, want) })
}

func severity(e store.Entity) state.Severity {
	return transitions.Normalize(e, time.Now()).Severity
}

// A shell that starts sleep in the background and exits leaves the sleep
// behind: the sweep finds it as the entity's leftover, by pid and command,
// in both of the tree's modes; the root's health stays process_dead.
func TestLeftoverOfAShellThatExited(t *testing.T) {
	for _, walk := range []bool{false, true} {
		name := map[bool]string{false: "events", true: "walk"}[walk]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			tr := newTree(t, walk)
			f.r.Trees = tr
			sh := startShell(t, f, "sleep 300 & read x; exit 0")
			f.register(store.Entity{Type: "session", ID: "s", PID: sh.root.PID})
			if err := tr.Watch(sh.root); err != nil {
				t.Fatal(err)
			}
			sleep := waitDescendant(t, tr, sh.root, "sleep")

			f.sweep()
			if r := leftover(f.get("session", "s")); r != nil {
				t.Fatalf("a live root's children are its work, not leftovers: %+v", r)
			}

			sh.exit(t)
			f.sweep()
			e := f.get("session", "s")
			r := leftover(e)
			if r == nil {
				t.Fatalf("no leftover finding; reasons %+v", e.Reasons)
			}
			if e.Health != state.HealthProcessDead {
				t.Errorf("health %s, want process_dead", e.Health)
			}
			if !names(r, sleep, "sleep") || !strings.Contains(r.Message, "1 descendant still running (sleep)") ||
				!strings.Contains(r.Message, fmt.Sprintf("pid %d", sh.root.PID)) {
				t.Errorf("the finding does not name the sleep (pid %d) and the dead root: %q %+v", sleep, r.Message, r.Evidence)
			}
			if got := severity(e); got != state.SeverityCritical {
				t.Errorf("severity %s (process_dead): want critical", got)
			}
			if rep := f.sweep(); rep.Written != 0 {
				t.Errorf("an unchanged leftover was written again (%d)", rep.Written)
			}

			// The entity ends and its tree is forgotten (the monitor's drop):
			// the finding stays on the recorded processes, now critical on
			// its own, and goes when they go.
			if _, err := f.w.Transition(context.Background(), transitions.Request{Type: "session", ID: "s", To: "completed", Actor: transitions.ActorOrchestrator}); err != nil {
				t.Fatal(err)
			}
			tr.Forget(sh.root)
			f.sweep()
			e = f.get("session", "s")
			if r := leftover(e); r == nil || !names(r, sleep, "sleep") {
				t.Fatalf("the ended entity lost its leftover: %+v", e.Reasons)
			}
			if got := severity(e); got != state.SeverityCritical {
				t.Errorf("an ended entity's leftover reads %s, want critical", got)
			}
			syscall.Kill(sleep, syscall.SIGKILL)
			testenv.Eventually(t, "the leftover's finding cleared", 10*time.Second, func() (bool, string) {
				f.sweep()
				e := f.get("session", "s")
				return leftover(e) == nil, fmt.Sprint(e.Reasons)
			})
		})
	}
}

// A daemon started by a double fork is reparented away from the root at
// once: no ppid chain leads to it, but the connector's fork events do.
func TestLeftoverOfADoubleFork(t *testing.T) {
	f := newFixture(t)
	tr := newTree(t, false)
	f.r.Trees = tr
	sh := startShell(t, f, "read x; (sleep 301 &); read y; exit 0")
	f.register(store.Entity{Type: "session", ID: "s", PID: sh.root.PID})
	if err := tr.Watch(sh.root); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(sh.stdin, "fork\n"); err != nil {
		t.Fatal(err)
	}
	daemon := waitDescendant(t, tr, sh.root, "sleep")
	sh.exit(t)
	f.sweep()
	e := f.get("session", "s")
	if r := leftover(e); r == nil || !names(r, daemon, "sleep") {
		t.Fatalf("the double-forked sleep (pid %d) is not a leftover: %+v", daemon, e.Reasons)
	}
}

// A one-shot run (no tree kept) of an ended entity whose process still
// runs finds its children by one /proc walk; an open entity with a live
// root has none.
func TestLeftoverByOneWalkWithoutATree(t *testing.T) {
	f := newFixture(t)
	sh := startShell(t, f, "sleep 302 & read x")
	f.register(store.Entity{Type: "session", ID: "s", PID: sh.root.PID})
	tr := newTree(t, true)
	if err := tr.Watch(sh.root); err != nil {
		t.Fatal(err)
	}
	sleep := waitDescendant(t, tr, sh.root, "sleep")
	if _, err := f.w.Transition(context.Background(), transitions.Request{Type: "session", ID: "s", To: "completed", Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Observe(context.Background(), f.get("session", "s"), judge.Event{}); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	e := f.get("session", "s")
	r := leftover(e)
	if r == nil || !names(r, sleep, "sleep") {
		t.Fatalf("no leftover naming the sleep (pid %d): %+v", sleep, e.Reasons)
	}
	if !strings.Contains(r.Message, "still running; 1 descendant still running (sleep)") {
		t.Errorf("message %q", r.Message)
	}
}

// leftoverSession registers a session whose shell started sleep in the
// background and exited (run as uid, when not -1), sweeps until the
// finding names the sleep, and returns the sleep's pid.
func leftoverSession(t *testing.T, f *fixture, uid int) int {
	t.Helper()
	tr := newTree(t, false)
	f.r.Trees = tr
	cmd := exec.Command("sh", "-c", "sleep 303 & read x; exit 0")
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a shell as uid %d: %v", uid, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	_, ticks, err := f.host.StartOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	sh := &rootShell{cmd: cmd, stdin: in, root: proctree.Root{PID: cmd.Process.Pid, StartTicks: ticks}}
	f.register(store.Entity{Type: "session", ID: "s", PID: sh.root.PID})
	if err := tr.Watch(sh.root); err != nil {
		t.Fatal(err)
	}
	sleep := waitDescendant(t, tr, sh.root, "sleep")
	sh.exit(t)
	f.sweep()
	if r := leftover(f.get("session", "s")); r == nil || !names(r, sleep, "sleep") {
		t.Fatalf("no leftover naming the sleep (pid %d)", sleep)
	}
	return sleep
}

// signals records what the reaper would send, sending nothing.
type signals struct{ sent []string }

func (s *signals) send(pid, sig int) error {
	s.sent = append(s.sent, fmt.Sprintf("%d %s", pid, syscall.Signal(sig)))
	return nil
}

// With reaper.kill_leftovers the leftover is ended once the finding is
// leftover_grace old (SIGTERM), and each signal is logged with the
// entity, the pid and the command.
func TestKillLeftoversEndsThemAfterTheGrace(t *testing.T) {
	f := newFixture(t)
	core, logs := observer.New(zap.InfoLevel)
	f.r.Log = zap.New(core)
	f.r.Settings.KillLeftovers, f.r.Settings.LeftoverGrace, f.r.Settings.KillUIDs = true, 30*time.Second, []int{0, syscall.Getuid()}
	sleep := leftoverSession(t, f, -1)

	f.clock.Advance(29 * time.Second)
	f.sweep()
	if !alive(sleep) {
		t.Fatal("the leftover was signalled within leftover_grace")
	}
	f.clock.Advance(2 * time.Second)
	f.sweep()
	testenv.Eventually(t, "the leftover ended", 10*time.Second, func() (bool, string) { return !alive(sleep), "still alive" })
	entries := logs.FilterMessage("signalled leftover (reaper.kill_leftovers)").All()
	if len(entries) != 1 {
		t.Fatalf("want one audit line for the signal, got %d: %v", len(entries), logs.All())
	}
	fields := entries[0].ContextMap()
	if fields["entity"] != "session/s" || fields["pid"] != int64(sleep) || fields["command"] != "sleep" || fields["signal"] != "SIGTERM" {
		t.Errorf("audit line %v", fields)
	}
	testenv.Eventually(t, "the finding cleared", 10*time.Second, func() (bool, string) {
		f.sweep()
		e := f.get("session", "s")
		return leftover(e) == nil, fmt.Sprint(e.Reasons)
	})
}

// A leftover of a user outside reaper.kill_users, or whose pid now names
// another process, is never signalled.
func TestKillLeftoversGuards(t *testing.T) {
	t.Run("owner not in kill_users", func(t *testing.T) {
		f := newFixture(t)
		var sig signals
		f.r.Signal = sig.send
		core, logs := observer.New(zap.InfoLevel)
		f.r.Log = zap.New(core)
		f.r.Settings.KillLeftovers, f.r.Settings.LeftoverGrace, f.r.Settings.KillUIDs = true, time.Second, []int{0}
		sleep := leftoverSession(t, f, 65534) // nobody
		f.clock.Advance(time.Hour)
		f.sweep()
		if len(sig.sent) != 0 {
			t.Errorf("signalled %v: the leftover (pid %d) runs as nobody, outside kill_users", sig.sent, sleep)
		}
		if n := logs.FilterMessageSnippet("not in reaper.kill_users").Len(); n == 0 {
			t.Errorf("the refusal was not logged: %v", logs.All())
		}
	})
	t.Run("pid reused", func(t *testing.T) {
		f := newFixture(t)
		var sig signals
		f.r.Signal = sig.send
		f.r.Settings.KillLeftovers, f.r.Settings.LeftoverGrace, f.r.Settings.KillUIDs = true, time.Second, []int{0, syscall.Getuid()}
		sleep := leftoverSession(t, f, -1)
		// The stored finding names the sleep's pid with another start:
		// as if it had died and its pid gone to a newcomer.
		db := testenv.SQL(t, f.st.Path())
		e := f.get("session", "s")
		r := leftover(e)
		for i := range r.Evidence {
			r.Evidence[i].ID = fmt.Sprintf("pid:%d:1", sleep)
		}
		b, err := json.Marshal(e.Reasons)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE entities SET reasons = ? WHERE type = 'session' AND id = 's'`, string(b)); err != nil {
			t.Fatal(err)
		}
		f.r.Trees = nil // the tree forgotten: only the stored finding names it
		// A daemon started again: its deadlines were in memory.
		f.timers, f.r.leftovers = nil, leftoverKills{}
		f.clock.Advance(time.Hour)
		f.sweep()
		if len(sig.sent) != 0 {
			t.Errorf("signalled %v: pid %d is not the process the finding recorded", sig.sent, sleep)
		}
		if leftover(f.get("session", "s")) != nil {
			t.Error("a finding naming a process that is no longer there stays")
		}
	})
}

// TestKillLeftoversTermThenKillByDeadline: the two signals are deadlines
// of their own, not sweeps: SIGTERM at leftover_grace, SIGKILL kill_grace
// after it with no sweep between, each once however many sweeps come.
func TestKillLeftoversTermThenKillByDeadline(t *testing.T) {
	f := newFixture(t)
	var sig signals
	f.r.Signal = sig.send
	f.r.Settings.KillLeftovers, f.r.Settings.LeftoverGrace, f.r.Settings.KillGrace = true, 30*time.Second, 10*time.Second
	f.r.Settings.KillUIDs = []int{0, syscall.Getuid()}
	sleep := leftoverSession(t, f, -1)
	term, kill := fmt.Sprintf("%d terminated", sleep), fmt.Sprintf("%d killed", sleep)
	f.clock.Advance(29 * time.Second)
	f.sweep()
	f.sweep()
	if len(sig.sent) != 0 {
		t.Fatalf("signalled within leftover_grace: %v", sig.sent)
	}
	f.clock.Advance(time.Second)
	f.fire() // the deadline, no sweep
	if !slices.Equal(sig.sent, []string{term}) {
		t.Fatalf("at leftover_grace: %v, want [%s]", sig.sent, term)
	}
	f.sweep()
	f.clock.Advance(9 * time.Second)
	f.sweep()
	if !slices.Equal(sig.sent, []string{term}) {
		t.Fatalf("within kill_grace of the SIGTERM: %v", sig.sent)
	}
	f.clock.Advance(time.Second)
	f.fire()
	if !slices.Equal(sig.sent, []string{term, kill}) {
		t.Fatalf("kill_grace after the SIGTERM: %v, want [%s %s]", sig.sent, term, kill)
	}
}

// TestLeftoversOfAnUnprovenOwnerAreReported: a root registered by a
// principal that proved no uid (a token without uids) keeps its leftover
// finding, and nothing is signalled.
func TestLeftoversOfAnUnprovenOwnerAreReported(t *testing.T) {
	f := newFixture(t)
	var sig signals
	f.r.Signal = sig.send
	f.r.Settings.KillLeftovers, f.r.Settings.LeftoverGrace = true, time.Second
	f.r.Settings.KillUIDs = []int{0, syscall.Getuid()}
	tr := newTree(t, false)
	f.r.Trees = tr
	sh := startShell(t, f, "sleep 303 & read x; exit 0")
	f.registerAs(store.Entity{Type: "session", ID: "s", PID: sh.root.PID}, transitions.Principal{Name: "token:ci"})
	if err := tr.Watch(sh.root); err != nil {
		t.Fatal(err)
	}
	sleep := waitDescendant(t, tr, sh.root, "sleep")
	sh.exit(t)
	f.sweep()
	f.clock.Advance(time.Hour)
	f.sweep()
	f.fire()
	if len(sig.sent) != 0 {
		t.Errorf("signalled %v: the registration proved no uid", sig.sent)
	}
	if r := leftover(f.get("session", "s")); r == nil || !names(r, sleep, "sleep") {
		t.Errorf("the leftover is not reported")
	}
}
