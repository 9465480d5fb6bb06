package e2e

// Issue 23, observations 1 and 3, replayed against the built binary with
// real processes and files: an ad-hoc probe of an entity prints the
// daemon's verdict and changes nothing, and a first registration starts
// the state's clock.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
)

// Observation 1: `probe --entity` after a dismissal printed the CLI's own
// verdict (10m/60m), wrote it, and the dismissed stall came back. Now it
// judges with the daemon's settings (its config) and writes nothing, with
// or without a config; only --record records.
func TestJudgeObs1ProbeEntityIsReadOnly(t *testing.T) {
	d := truthStart(t, "")
	cfg := filepath.Join(filepath.Dir(d.db), "config.yaml")
	hb := testenv.AgedFile(t, t.TempDir(), "s9.hb", "", time.Minute)
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s9","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, p.Process.Pid, hb))
	const fp = "session:s9:run.health.stalled"
	testenv.Eventually(t, "the stall in the queue", truthWait, func() (bool, string) {
		_, ok := item(d.queue(t, ""), fp)
		return ok, d.must(t, "session", "s9").Display
	})
	if code, body := d.do(t, "POST", "/api/attention/dismiss", fmt.Sprintf(`{"fingerprint":%q}`, fp)); code != 200 {
		t.Fatalf("dismiss: %d %s", code, body)
	}
	before := d.must(t, "session", "s9")

	// With the daemon's config: the daemon's verdict, nothing written.
	r := wd(t, "", "probe", "--entity", "session/s9", "--config", cfg)
	if r.code != 2 || !strings.HasPrefix(r.stdout, "CRITICAL - Running · Stalled") {
		t.Fatalf("probe with the daemon's config: %+v", r)
	}
	// With no config of its own: the settings the daemon recorded in the
	// database (issue 39), named on stderr, so the same verdict; and still
	// nothing is written.
	r = wd(t, "", "probe", "--entity", "session/s9", "--db", d.db)
	if r.code != 2 || !strings.HasPrefix(r.stdout, "CRITICAL - Running · Stalled") || !strings.Contains(r.stderr, "judging with the settings the daemon of host ") ||
		strings.Contains(strings.ReplaceAll(r.stdout, "not recorded:", ""), "recorded:") {
		t.Fatalf("a probe on the database with no config: %+v", r)
	}
	// Several sweeps later the daemon's own verdict stands, the dismissal
	// holds, and the row is the one before the probes: three more runs,
	// two whole sweeps at least, however long they take.
	d.waitRuns(t, "sweep", 3)
	after := d.must(t, "session", "s9")
	if after.Display != "Running · Stalled" || !after.UpdatedAt.Equal(before.UpdatedAt.Time) || !after.HealthSince.Equal(before.HealthSince.Time) {
		t.Fatalf("after the probes: %s updated %v (was %v) health_since %v (was %v)", after.Display, after.UpdatedAt, before.UpdatedAt, after.HealthSince, before.HealthSince)
	}
	if _, ok := item(d.queue(t, ""), fp); ok {
		t.Fatal("the dismissed stall came back after the probes")
	}
	if it, ok := item(d.queue(t, "include_dismissed=true"), fp); !ok || !it.Dismissed {
		t.Fatalf("the stall is no longer the dismissed occurrence: %+v (found %v)", it, ok)
	}
	d.assertCountsAgree(t)
}

// Observation 3: registered with a ten-minute-old heartbeat file, the
// entity read "Running · Stalled" in the same millisecond. The heartbeat
// ages from the later of the file and the start of the current state,
// which a first registration starts; a re-registration does not restart it.
func TestJudgeObs3FirstRegistrationStartsTheClock(t *testing.T) {
	const sections = `thresholds:
  idle_after: 2s
  stalled_after: 4s
jobs:
  sweep: "@every 1s"
`
	d := truthStart(t, sections)
	hb := testenv.AgedFile(t, t.TempDir(), "s3.hb", "", 10*time.Minute)
	p := testenv.Sleep(t)
	doc := fmt.Sprintf(`{"type":"session","id":"s3","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, p.Process.Pid, hb)
	d.register(t, doc)
	e := d.must(t, "session", "s3")
	created := e.CreatedAt.Time

	// Whenever it is judged idle or stalled, that verdict is no earlier
	// than the threshold after its registration: the file's old mtime
	// counts for nothing before it.
	var stalledSince time.Time
	testenv.Eventually(t, "stalled, four seconds after its registration", truthWait, func() (bool, string) {
		e := d.must(t, "session", "s3")
		switch e.Display {
		case "Running · Idle":
			if e.HealthSince.Before(created.Add(2 * time.Second)) {
				t.Fatalf("idle at %v, registered at %v: sooner than idle_after", e.HealthSince, created)
			}
		case "Running · Stalled":
			if e.HealthSince.Before(created.Add(4 * time.Second)) {
				t.Fatalf("stalled at %v, registered at %v: sooner than stalled_after", e.HealthSince, created)
			}
			stalledSince = e.HealthSince.Time
			return true, e.Display
		}
		return false, e.Display
	})

	// Re-registered (the same document): the clock is not restarted, the
	// stall and its onset stand.
	d.register(t, doc)
	d.waitRuns(t, "sweep", 3) // two whole sweeps at least
	e = d.must(t, "session", "s3")
	if e.Display != "Running · Stalled" || !e.HealthSince.Equal(stalledSince) {
		t.Fatalf("after re-registration: %s since %v (was stalled since %v)", e.Display, e.HealthSince, stalledSince)
	}
	d.assertCountsAgree(t)
}
