package e2e

import (
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/probe"
)

// ceiling bounds every wait on what runs outside the test: the binary, a
// daemon and its jobs, a real process, Alertmanager, Chromium. Each wait
// ends as soon as its condition holds, so a passing run never comes near
// it, on a loaded machine either; one that reaches it fails saying what
// it last saw (testenv.Eventually). It is no budget of the product's: a
// contract's own deadline (/readyz noticing a lost store within 5s) stays
// a check of its own.
const ceiling = 3 * time.Minute

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

// unixAt is the time of Unix seconds s, the way fixtures name times.
func unixAt(s float64) time.Time { return unixtime.FromSeconds(s) }

// onlyJudgeLines reports whether stderr holds nothing but the lines a
// command reading a database prints about who judges (no daemon config
// found; no daemon serving the database): what the tests of the command's
// own output allow beside it.
func onlyJudgeLines(stderr string) bool {
	for line := range strings.SplitSeq(strings.TrimRight(stderr, "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "watchdog: no daemon config found (") &&
			!strings.HasPrefix(line, "watchdog: no watchdog daemon is serving this database;") {
			return false
		}
	}
	return true
}

// judgedBy is the "judge" object of `status --json` and `attention
// --json` read from a database (docs/reference/cli.md): whether a daemon
// serves it now, when and by which host it was last judged, and the
// daemon config the command judged with.
type judgedBy struct {
	DaemonServing bool           `json:"daemon_serving"`
	LastJudgedAt  *unixtime.Time `json:"last_judged_at"`
	LastJudgedBy  string         `json:"last_judged_by,omitempty"`
	Config        string         `json:"config"`
	Settings      *struct {
		Host    string   `json:"host"`
		Source  string   `json:"source"`
		Differs []string `json:"differs"`
	} `json:"settings"`
}
