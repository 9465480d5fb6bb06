package attention

import (
	"strings"
	"testing"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// TestClusterSpeaksForAll: a cluster's header gives the count, the code's
// registered summary, the range of onsets and the entities, and nothing
// of one item's own message (observation 4 of "one judgement,
// everywhere").
func TestClusterSpeaksForAll(t *testing.T) {
	now := time.Date(2026, 11, 26, 18, 30, 0, 0, time.UTC)
	item := func(id, msg string, at time.Time) Item {
		return Item{Entity: Entity{Type: "session", ID: id}, Reason: Reason{Code: state.RunHealthProcessDead, Summary: msg},
			ClusterID: ClusterID(state.RunHealthProcessDead), ClusterSize: 5, FirstSeenAt: unixtime.Of(at)}
	}
	items := []Item{
		item("s-2", "pid 23338 was killed by SIGTERM", now.Add(-34*time.Minute)),
		item("s-1", "pid 23339 was killed by SIGKILL", now.Add(-28*time.Minute)),
		item("s-3", "pid 23340 was killed by SIGKILL", now.Add(-30*time.Minute)),
		item("s-4", "pid 23341 was killed by SIGKILL", now.Add(-29*time.Minute)),
	}
	c := ClusterOf(items)
	h := c.Header(now)
	want := "The recorded process is conclusively gone · first 17:56:00Z, last 18:02:00Z · session/s-2, session/s-1, session/s-3 +2"
	if h != want {
		t.Errorf("header %q\nwant   %q", h, want)
	}
	if c.Size != 5 {
		t.Errorf("size %d, want the whole queue's 5", c.Size)
	}
	for _, bad := range []string{"pid", "SIG"} {
		if strings.Contains(h, bad) {
			t.Errorf("header %q speaks for one item (%s)", h, bad)
		}
	}
	one := ClusterOf(items[:1])
	if got := one.Onsets(now); got != "since 17:56:00Z" {
		t.Errorf("one onset reads %q", got)
	}
	if got := one.Onsets(now.Add(48 * time.Hour)); got != "since 2026-11-26 17:56:00Z" {
		t.Errorf("another day's onset reads %q", got)
	}
}

// TestTextClusterHeader: `watchdog attention` prints the header ClusterOf
// makes, and each item's own message only on its line.
func TestTextClusterHeader(t *testing.T) {
	now := time.Date(2026, 11, 26, 18, 30, 0, 0, time.UTC)
	var items []Item
	for i, sig := range []string{"SIGTERM", "SIGKILL", "SIGKILL"} {
		id := []string{"s-1", "s-2", "s-3"}[i]
		items = append(items, Item{Fingerprint: "session:" + id + ":run.health.process_dead", Severity: state.SeverityCritical,
			Entity: Entity{Type: "session", ID: id, Label: "session/" + id}, Status: "running",
			Reason:    Reason{Code: state.RunHealthProcessDead, Summary: "pid 1 was killed by " + sig},
			ClusterID: ClusterID(state.RunHealthProcessDead), ClusterSize: 3, FirstSeenAt: unixtime.Of(now.Add(-time.Duration(i+1) * time.Minute))})
	}
	q := Queue{GeneratedAt: unixtime.Of(now), Total: 3, BySeverity: map[state.Severity]int{state.SeverityCritical: 3}, Items: items}
	out := q.Text()
	lines := strings.Split(out, "\n")
	var header string
	for _, l := range lines {
		if strings.HasPrefix(l, "  run.health.process_dead") {
			header = l
		}
	}
	want := "  run.health.process_dead · 3 items · The recorded process is conclusively gone · first 18:27:00Z, last 18:29:00Z · session/s-1, session/s-2, session/s-3"
	if header != want {
		t.Errorf("header %q\nwant   %q\n%s", header, want, out)
	}
	if strings.Count(out, "SIGKILL") != 2 || strings.Count(out, "SIGTERM") != 1 {
		t.Errorf("each item's own signal belongs on its own line:\n%s", out)
	}
}
