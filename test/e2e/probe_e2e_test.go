package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"watchdog/internal/testenv"
)

// TestProbeBinaryExitCodes drives the built binary (binPath, built by
// TestMain in cli_e2e_test.go) through every exit code of `watchdog probe`.
func TestProbeBinaryExitCodes(t *testing.T) {
	pid, _ := adhocSleep(t)
	dead := testenv.DeadPID(t)
	dir := t.TempDir()
	idle := testenv.AgedFile(t, dir, "idle.hb", "", 20*time.Minute)

	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		first string // prefix of stdout's first line; "" for an error
	}{
		{"0: live sleep", []string{"probe", "--pid", fmt.Sprint(pid)}, 0, "INFO - Running · Alive"},
		{"1: idle heartbeat", []string{"probe", "--pid", fmt.Sprint(pid), "--heartbeat", idle}, 1, "WARNING - Running · Idle"},
		{"2: dead pid", []string{"probe", "--pid", fmt.Sprint(dead)}, 2, "CRITICAL - Running · Process dead"},
		{"2: dead pid, JSON", []string{"probe", "--pid", fmt.Sprint(dead), "--json"}, 2, "{"},
		{"3: missing --pid", []string{"probe"}, 3, ""},
		{"3: --pid abc", []string{"probe", "--pid", "abc"}, 3, ""},
		{"3: --pid -5", []string{"probe", "--pid", "-5"}, 3, ""},
		{"3: unreadable contract", []string{"probe", "--pid", fmt.Sprint(pid), "--contract", filepath.Join(dir, "absent.yaml")}, 3, ""},
		{"3: unknown flag", []string{"probe", "--pid", fmt.Sprint(pid), "--bogus"}, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := wd(t, "", tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", r.code, tc.code, r.stdout, r.stderr)
			}
			if tc.first == "" {
				assertOneLineError(t, r)
				if r.stdout != "" {
					t.Errorf("stdout %q on an error", r.stdout)
				}
				return
			}
			if !strings.HasPrefix(r.stdout, tc.first) || r.stderr != "" {
				t.Errorf("stdout %q, stderr %q; want first line %q", r.stdout, r.stderr, tc.first)
			}
		})
	}
}
