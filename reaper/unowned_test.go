package reaper

import (
	"context"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
)

// reasonOf returns e's stored finding with code, if any.
func reasonOf(e store.Entity, code state.ReasonCode) (state.StateReason, bool) {
	for _, r := range e.Reasons {
		if r.Code == code {
			return r, true
		}
	}
	return state.StateReason{}, false
}

// TestUnownedDeathFlaggedAfterGrace: every type without an end for a dead
// process is flagged once terminal_grace has passed, with the moment of
// the death and the command that records an end; the flag replaces the
// probe's death finding, holds across sweeps, and a type with an end is
// ended instead.
func TestUnownedDeathFlaggedAfterGrace(t *testing.T) {
	cases := []struct {
		typ, lifecycle string
		hint           string // "" when the type is ended, not flagged
	}{
		{"play", "running", "watchdog transition play/x failed --reason run.failed.operator"},
		{"show", "active", "watchdog transition show/x failed --reason run.failed.operator"},
		{"team", "active", "watchdog transition team/x closed"},
		{"session", "running", ""},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			f := newFixture(t)
			f.register(store.Entity{Type: tc.typ, ID: "x", Lifecycle: ptr(tc.lifecycle), PID: testenv.DeadPID(t)})
			f.sweep()
			dead := f.get(tc.typ, "x")
			if dead.DeadSince.IsZero() {
				t.Fatalf("death not recorded: %+v", dead)
			}
			if _, ok := reasonOf(dead, state.SystemHealthProcessDeadUnowned); ok {
				t.Fatalf("flagged within terminal_grace: %+v", dead.Reasons)
			}
			f.clock.Advance(f.r.Settings.TerminalGrace)
			f.sweep()
			got := f.get(tc.typ, "x")
			flag, ok := reasonOf(got, state.SystemHealthProcessDeadUnowned)
			if tc.hint == "" {
				if ok {
					t.Fatalf("a type with an end for a dead process flagged: %+v", got.Reasons)
				}
				if rep := f.enforce(); len(rep.Actions) != 1 || !rep.Actions[0].Applied {
					t.Fatalf("not ended: %+v", rep.Actions)
				}
				return
			}
			if !ok {
				t.Fatalf("not flagged past terminal_grace: %+v", got.Reasons)
			}
			if _, still := reasonOf(got, state.RunHealthProcessDead); still {
				t.Errorf("the probe's death finding kept beside the flag: %+v", got.Reasons)
			}
			if !strings.Contains(flag.Message, tc.hint) || !strings.HasSuffix(flag.Message, "process dead since "+state.Stamp(dead.DeadSince)) {
				t.Errorf("message %q: want %q and the death's moment last", flag.Message, tc.hint)
			}
			if !flag.Since.Equal(dead.DeadSince) || len(flag.Evidence) == 0 {
				t.Errorf("since %v (want %v), evidence %+v", flag.Since, dead.DeadSince, flag.Evidence)
			}
			if ns := f.get(tc.typ, "x"); ns.LifecycleOr("") != tc.lifecycle {
				t.Errorf("lifecycle moved to %s", ns.LifecycleOr(""))
			}
			f.clock.Advance(time.Minute)
			if rep := f.sweep(); rep.Written != 0 {
				t.Errorf("a later sweep rewrote the flag: %+v", rep)
			}
			if rep := f.enforce(); len(rep.Actions) != 0 {
				t.Errorf("enforce_terminal acted on a flagged %s: %+v", tc.typ, rep.Actions)
			}
		})
	}
}

// TestRunOnceDryRunProbesFirst: on a store no sweep has seen, a dry run
// finds the deaths itself, names each fate, and writes nothing; a real run
// records them, and past the grace ends what has an end and flags the rest.
func TestRunOnceDryRunProbesFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.register(store.Entity{Type: "session", ID: "s", PID: testenv.DeadPID(t)})
	f.register(store.Entity{Type: "play", ID: "p", PID: testenv.DeadPID(t)})

	f.r.Settings.DryRun = true
	dry, err := f.r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fates := map[string]string{}
	for _, w := range dry.Waiting {
		fates[w.Type+"/"+w.ID] = w.Fate + " " + w.To
	}
	if fates["session/s"] != "end aborted" || fates["play/p"] != "flag " || dry.Probed != 2 {
		t.Fatalf("dry run on a fresh store: waiting %+v, probed %d", dry.Waiting, dry.Probed)
	}
	if !strings.Contains(dry.Text(), "waiting play/p (would flag it)") {
		t.Errorf("text:\n%s", dry.Text())
	}
	for _, id := range [][2]string{{"session", "s"}, {"play", "p"}} {
		if e := f.get(id[0], id[1]); !e.DeadSince.IsZero() || len(e.Reasons) != 0 {
			t.Errorf("the dry run wrote %s/%s: %+v", id[0], id[1], e)
		}
	}

	f.r.Settings.DryRun = false
	if _, err := f.r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(f.r.Settings.TerminalGrace)
	for _, dryRun := range []bool{true, false} {
		f.r.Settings.DryRun = dryRun
		rep, err := f.r.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Actions) != 1 || rep.Actions[0].ID != "s" || rep.Actions[0].Applied == dryRun {
			t.Errorf("dry %v: actions %+v", dryRun, rep.Actions)
		}
		if len(rep.Flagged) != 1 || rep.Flagged[0].ID != "p" || len(rep.Waiting) != 0 {
			t.Errorf("dry %v: flagged %+v, waiting %+v", dryRun, rep.Flagged, rep.Waiting)
		}
		verb := map[bool]string{true: "would flag play/p", false: "flagged play/p"}[dryRun]
		if !strings.Contains(rep.Text(), verb) {
			t.Errorf("dry %v: text\n%s", dryRun, rep.Text())
		}
	}
	if l := f.get("session", "s").LifecycleOr(""); l != "aborted" {
		t.Errorf("session %s, want aborted", l)
	}
	if _, ok := reasonOf(f.get("play", "p"), state.SystemHealthProcessDeadUnowned); !ok || f.get("play", "p").LifecycleOr("") != "running" {
		t.Errorf("play: %+v", f.get("play", "p"))
	}
}
