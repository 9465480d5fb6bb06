package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
)

// adhocRun is one in-process run of the probe command.
type adhocRun struct {
	code           int
	stdout, stderr string
}

// runProbeCmd executes newProbeCmd with args and maps its error to an exit
// code the way main does.
func runProbeCmd(t *testing.T, args ...string) adhocRun {
	t.Helper()
	cmd := newProbeCmd()
	var out, errb bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err := cmd.Execute()
	r := adhocRun{stdout: out.String(), stderr: errb.String()}
	if err != nil {
		r.code = 1
		var ee *exitError
		if errors.As(err, &ee) {
			r.code = ee.code
		}
		if msg := err.Error(); msg != "" {
			r.stderr += "watchdog: " + msg + "\n"
		}
	}
	return r
}

func (r adhocRun) firstLine() string {
	line, _, _ := strings.Cut(r.stdout, "\n")
	return line
}

// adhocSleep starts a real sleep and returns its pid and start time.
func adhocSleep(t *testing.T) (int, float64) {
	t.Helper()
	c := testenv.Sleep(t)
	id, err := probe.NewHost().Identify(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return id.PID, unixtime.Seconds(id.StartTime)
}

func TestProbeCommand(t *testing.T) {
	pid, start := adhocSleep(t)
	dead := testenv.DeadPID(t)
	dir := t.TempDir()
	fresh := testenv.AgedFile(t, dir, "fresh.hb", "", time.Minute)
	idle := testenv.AgedFile(t, dir, "idle.hb", "", 20*time.Minute)
	old := testenv.AgedFile(t, dir, "old.hb", "", 5*time.Minute)
	testenv.AgedFile(t, dir, "run/review.md", "# ok\n", 0)
	testenv.AgedFile(t, dir, "run/empty.md", "", 0)
	testenv.AgedFile(t, dir, "run/out.json", "{not json", 0)
	yamlContract := testenv.AgedFile(t, dir, "contract.yaml", "artifacts:\n  - path: review.md\n  - path: out.json\n    kind: json\n", 0)
	jsonContract := testenv.AgedFile(t, dir, "contract.json", `{"artifacts": [{"path": "review.md", "min_bytes": 1}, {"path": "absent.md", "required": false}]}`, 0)
	root := filepath.Join(dir, "run")
	p := fmt.Sprint(pid)

	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		first string
		more  []string // substrings of the output after the first line
	}{
		// Info and neutral: exit 0.
		{"alive", []string{"--pid", p}, 0, "INFO - Running · Alive", []string{"evidence: pid " + p + " alive (state "}},
		{"alive with identity", []string{"--pid", p, "--start-time", fmt.Sprintf("%.2f", start)}, 0, "INFO - Running · Alive", nil},
		{"fresh heartbeat", []string{"--pid", p, "--heartbeat", fresh}, 0, "INFO - Running · Alive", []string{"Z (heartbeat file " + fresh + ")"}},
		{"artifact present", []string{"--pid", p, "--artifacts-root", root, "--artifact", "review.md"}, 0, "INFO - Running · Alive · review.md present", []string{"evidence: review.md: 5 bytes"}},
		{"artifact glob", []string{"--pid", p, "--artifacts-root", root, "--artifact", "*.md"}, 0, "INFO - Running · Alive · *.md present", nil},
		{"JSON contract", []string{"--pid", p, "--artifacts-root", root, "--contract", jsonContract}, 0, "INFO - Running · Alive · review.md present", nil},
		// Artifacts are due when the run ends, as for the daemon.
		{"artifact missing, running", []string{"--pid", p, "--artifacts-root", root, "--artifact", "review.pdf"}, 0, "INFO - Running · Alive · review.pdf not due yet", nil},
		{"some missing, running", []string{"--pid", p, "--artifacts-root", root, "--artifact", "review.md", "--artifact", "review.pdf"}, 0, "INFO - Running · Alive · Artifacts not due yet", nil},

		// Warning: exit 1.
		{"idle heartbeat", []string{"--pid", p, "--heartbeat", idle}, 1, "WARNING - Running · Idle", []string{"reason run.health.idle: idle after 10m without a heartbeat; none since ", ", 20m ago"}},
		{"empty artifact", []string{"--pid", p, "--artifacts-root", root, "--artifact", "empty.md"}, 1, "WARNING - Running · Alive · empty.md invalid", []string{"empty.md: 0 bytes < min 1"}},
		{"YAML contract, invalid JSON", []string{"--pid", p, "--artifacts-root", root, "--contract", yamlContract}, 1, "WARNING - Running · Alive · Artifacts invalid", []string{"out.json: not valid JSON"}},

		// Critical: exit 2.
		{"dead pid", []string{"--pid", fmt.Sprint(dead)}, 2, "CRITICAL - Running · Process dead", []string{"reason run.health.process_dead: process is gone (no such process)"}},
		{"pid reused", []string{"--pid", p, "--start-time", fmt.Sprintf("%.2f", start-3600)}, 2, "CRITICAL - Running · Process dead", []string{"reason run.health.pid_reused"}},
		{"stalled", []string{"--pid", p, "--heartbeat", old, "--idle-after", "1m", "--stalled-after", "2m"}, 2, "CRITICAL - Running · Stalled", []string{"stalled after 2m without a heartbeat", "m ago"}},
		{"artifact missing, --ended", []string{"--pid", p, "--artifacts-root", root, "--artifact", "review.pdf", "--ended"}, 2, "CRITICAL - Running · Alive · No review.pdf produced", nil},
		{"artifact missing, pid gone", []string{"--pid", fmt.Sprint(dead), "--artifacts-root", root, "--artifact", "review.pdf"}, 2, "CRITICAL - Running · Process dead · No review.pdf produced", nil},
		{"escaping artifact", []string{"--pid", p, "--artifacts-root", root, "--artifact", "../contract.yaml"}, 1, "WARNING - Running · Alive · contract.yaml invalid", []string{"climbs out of the artifacts root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runProbeCmd(t, tc.args...)
			if r.code != tc.code || r.firstLine() != tc.first || r.stderr != "" {
				t.Fatalf("exit %d, first line %q, stderr %q; want exit %d, %q\n%s", r.code, r.firstLine(), r.stderr, tc.code, tc.first, r.stdout)
			}
			for _, s := range tc.more {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("output lacks %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

func TestProbeCommandJSON(t *testing.T) {
	dead := testenv.DeadPID(t)
	r := runProbeCmd(t, "--pid", fmt.Sprint(dead), "--json")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2: %s %s", r.code, r.stdout, r.stderr)
	}
	var ns state.NormalizedState
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ns); err != nil {
		t.Fatalf("output is not a NormalizedState: %v\n%s", err, r.stdout)
	}
	if ns.Lifecycle != "running" || ns.Outcome != "" || ns.Health != state.HealthProcessDead || ns.Severity != state.SeverityCritical ||
		ns.Delivery != state.DeliveryNotExpected || ns.PolicyVersion != "v1" || !ns.EvaluatedAt.After(unixAt(0)) {
		t.Errorf("state %+v", ns)
	}
	if len(ns.Reasons) != 1 || ns.Reasons[0].Code != state.RunHealthProcessDead || len(ns.Reasons[0].Evidence) == 0 || ns.Reasons[0].Evidence[0].Kind != "tool_result" {
		t.Errorf("reasons %+v", ns.Reasons)
	}
}

func TestProbeCommandBadArguments(t *testing.T) {
	dir := t.TempDir()
	unknownField := testenv.AgedFile(t, dir, "unknown.json", `{"artifacts": [{"path": "a", "colour": "red"}]}`, 0)
	unknownYAML := testenv.AgedFile(t, dir, "unknown.yaml", "artifacts:\n  - path: a\n    colour: red\n", 0)
	badKind := testenv.AgedFile(t, dir, "kind.yaml", "artifacts:\n  - path: a\n    kind: pdf\n", 0)
	empty := testenv.AgedFile(t, dir, "empty.yaml", "", 0)
	pid := fmt.Sprint(os.Getpid())

	for _, tc := range []struct {
		name string
		args []string
		msg  string // substring of the one error line
	}{
		{"no pid", nil, "--pid is required"},
		{"pid not a number", []string{"--pid", "abc"}, `--pid "abc" is not a process id`},
		{"negative pid", []string{"--pid", "-5"}, `--pid "-5" is not a process id`},
		{"zero pid", []string{"--pid", "0"}, `--pid "0" is not a process id`},
		{"bad start time", []string{"--pid", pid, "--start-time", "yesterday"}, `--start-time "yesterday" is not a time`},
		{"bad duration", []string{"--pid", pid, "--idle-after", "five"}, `--idle-after "five" is not a positive duration`},
		{"idle after stalled", []string{"--pid", pid, "--idle-after", "2h"}, "must be shorter than --stalled-after"},
		{"unreadable contract", []string{"--pid", pid, "--contract", filepath.Join(dir, "absent.yaml")}, "no such file"},
		{"unknown JSON field", []string{"--pid", pid, "--contract", unknownField}, `unknown field "colour"`},
		{"unknown YAML field", []string{"--pid", pid, "--contract", unknownYAML}, "field colour not found"},
		{"bad artifact kind", []string{"--pid", pid, "--contract", badKind}, `kind "pdf" is not one of`},
		{"empty contract", []string{"--pid", pid, "--contract", empty}, "empty contract"},
		{"root without artifacts", []string{"--pid", pid, "--artifacts-root", dir}, "--artifacts-root needs --artifact"},
		{"unknown flag", []string{"--pid", pid, "--bogus"}, "unknown flag: --bogus"},
		{"positional argument", []string{"--pid", pid, "extra"}, `unexpected argument "extra"`},
		{"entity without a store", []string{"--entity", "session/s-1", "--db", filepath.Join(dir, "absent.db")}, "no database at"},
		{"entity and pid", []string{"--entity", "session/s-1", "--pid", pid}, "takes no --pid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runProbeCmd(t, tc.args...)
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			if r.code != 3 || r.stdout != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "watchdog: probe: ") || !strings.Contains(lines[0], tc.msg) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 3 and one line with %q", r.code, r.stdout, r.stderr, tc.msg)
			}
		})
	}
}

func TestProbeCommandEntityHook(t *testing.T) {
	defer func(f func(*cobra.Command, string, bool) int) { probeEntityFunc = f }(probeEntityFunc)
	var got string
	probeEntityFunc = func(_ *cobra.Command, ref string, asJSON bool) int {
		got = fmt.Sprint(ref, asJSON)
		return 1
	}
	if r := runProbeCmd(t, "--entity", "play/p-1", "--json"); r.code != 1 || got != "play/p-1true" || r.stderr != "" {
		t.Errorf("exit %d, hook saw %q, stderr %q", r.code, got, r.stderr)
	}
}
