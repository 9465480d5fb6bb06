package e2e

// Issue 14's observations of the attention queue (1, 4, 7, 10, 13),
// replayed against the built binary: real processes, real heartbeat and
// artifact files, the daemon's HTTP API and its log.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
)

// truthWait is how long a test waits for the daemon's jobs (each runs
// every second) to reach a state: generous, so a slow host only waits.
const truthWait = ceiling

// itemsOf returns the queue's items of one entity.
func itemsOf(q attention.Queue, typ, id string) []attention.Item {
	var out []attention.Item
	for _, it := range q.Items {
		if it.Entity.Type == typ && it.Entity.ID == id {
			out = append(out, it)
		}
	}
	return out
}

func codesOf(items []attention.Item) []state.ReasonCode {
	out := make([]state.ReasonCode, len(items))
	for i, it := range items {
		out[i] = it.Reason.Code
	}
	return out
}

// TestTruthObs1DismissalCoversOneOccurrence: a stall dismissed, then
// recovered (Running · Alive), then stalled again, is a new item the
// queue shows without include_dismissed.
func TestTruthObs1DismissalCoversOneOccurrence(t *testing.T) {
	d := truthStart(t, "")
	hb := filepath.Join(t.TempDir(), "s-b.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	age := func() {
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(hb, old, old); err != nil {
			t.Fatal(err)
		}
	}
	p := testenv.Sleep(t)
	age()
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s-b","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, p.Process.Pid, hb))
	const fp = "session:s-b:run.health.stalled"

	var first attention.Item
	testenv.Eventually(t, "the stall in the queue", truthWait, func() (bool, string) {
		it, ok := item(d.queue(t, ""), fp)
		first = it
		return ok, fmt.Sprint(codesOf(itemsOf(d.queue(t, "include_dismissed=true"), "session", "s-b")))
	})
	d.assertCountsAgree(t)

	if code, body := d.do(t, "POST", "/api/attention/dismiss", fmt.Sprintf(`{"fingerprint":%q}`, fp)); code != http.StatusOK {
		t.Fatalf("dismiss: %d %s", code, body)
	}
	if _, ok := item(d.queue(t, ""), fp); ok {
		t.Fatalf("the dismissed stall is still in the queue")
	}
	if it, ok := item(d.queue(t, "include_dismissed=true"), fp); !ok || !it.Dismissed {
		t.Fatalf("include_dismissed does not show the dismissed stall: %+v (found %v)", it, ok)
	}
	d.assertCountsAgree(t)

	// The session recovers: its heartbeat file is touched until the
	// entity reads alive again.
	testenv.Eventually(t, "the session alive again", truthWait, func() (bool, string) {
		now := time.Now()
		if err := os.Chtimes(hb, now, now); err != nil {
			t.Fatal(err)
		}
		e := d.must(t, "session", "s-b")
		return e.Display == "Running · Alive", e.Display
	})
	if _, ok := item(d.queue(t, "include_dismissed=true"), fp); ok {
		t.Fatalf("the stall is still an item after the session recovered")
	}

	// It stalls again: a new occurrence, shown although the first one was
	// dismissed.
	age()
	var again attention.Item
	testenv.Eventually(t, "the recurrence in the queue without include_dismissed", truthWait, func() (bool, string) {
		it, ok := item(d.queue(t, ""), fp)
		again = it
		e := d.must(t, "session", "s-b")
		return ok, e.Display
	})
	if again.Dismissed || !again.FirstSeenAt.After(first.FirstSeenAt.Time) {
		t.Fatalf("the recurrence is not a new occurrence: first seen %v, again %v (dismissed %v)", first.FirstSeenAt, again.FirstSeenAt, again.Dismissed)
	}
	if e := d.must(t, "session", "s-b"); e.State.Severity != again.Severity {
		t.Fatalf("entity severity %s, item %s", e.State.Severity, again.Severity)
	}
	d.assertCountsAgree(t)
}

// TestTruthObs4LiveOrphanStays: an orphan whose process lives stays in
// the queue past failure_window; once its process is gone its items age
// out like any ended entity's.
func TestTruthObs4LiveOrphanStays(t *testing.T) {
	d := truthStart(t, "")
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"o-4","lifecycle":"running","pid":%d,"supervisor_pid":%d}`, p.Process.Pid, testenv.DeadPID(t)))
	testenv.Eventually(t, "the orphan ended by the reaper and still orphaned", truthWait, func() (bool, string) {
		e := d.must(t, "session", "o-4")
		return e.State.Lifecycle == "aborted" && e.State.Health == state.HealthOrphaned, e.Display
	})
	d.assertCountsAgree(t)
	// failure_window is 4s: watch the queue for well past it, from the
	// end on. The item must be there at every look.
	until := time.Now().Add(8 * time.Second)
	for time.Now().Before(until) {
		if items := itemsOf(d.queue(t, ""), "session", "o-4"); len(items) == 0 {
			e := d.must(t, "session", "o-4")
			t.Fatalf("the live orphan left the queue: %s (health %s)", e.Display, e.State.Health)
		}
		time.Sleep(500 * time.Millisecond)
	}
	d.assertCountsAgree(t)

	// Its process ends: the orphan's condition is over, and its items,
	// ended long before the window, leave the queue.
	_ = p.Process.Kill()
	_ = p.Wait()
	testenv.Eventually(t, "the dead orphan's items aged out", truthWait, func() (bool, string) {
		items := itemsOf(d.queue(t, ""), "session", "o-4")
		e := d.must(t, "session", "o-4")
		return len(items) == 0, fmt.Sprint(e.Display, codesOf(items))
	})
	d.assertCountsAgree(t)
}

// TestTruthObs7OneItemPerCause: a workflow failed for its artifact
// contract with an invalid artifact, and an orphan reaped as a phantom,
// are one item each, in the queue, the entity's reasons and
// watchdog_reasons_active.
func TestTruthObs7OneItemPerCause(t *testing.T) {
	d := truthStart(t, "")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.register(t, fmt.Sprintf(`{"type":"workflow","id":"w-7","lifecycle":"running","timeout_seconds":600,"artifacts_root":%q,
		"artifacts":[{"path":"a.json","required":true,"kind":"json"}]}`, root))
	if code, body := d.transition(t, "workflow", "w-7", `{"to":"failed","reason":{"code":"run.failed.artifact_contract","message":"a.json is not valid JSON"}}`); code != http.StatusOK {
		t.Fatalf("transition: %d %s", code, body)
	}
	p := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"o-7","lifecycle":"running","pid":%d,"supervisor_pid":%d}`, p.Process.Pid, testenv.DeadPID(t)))

	testenv.Eventually(t, "the invalid artifact judged, the orphan reaped", truthWait, func() (bool, string) {
		w, o := d.must(t, "workflow", "w-7"), d.must(t, "session", "o-7")
		return w.State.Delivery == state.DeliveryInvalid && o.State.Lifecycle == "aborted" && o.State.Health == state.HealthOrphaned,
			w.Display + " / " + o.Display
	})
	q := d.queue(t, "")
	for _, c := range []struct {
		typ, id string
		want    state.ReasonCode
	}{
		{"workflow", "w-7", state.RunFailedArtifactContract},
		{"session", "o-7", state.SystemReaperPhantomOrphaned},
	} {
		if got := codesOf(itemsOf(q, c.typ, c.id)); fmt.Sprint(got) != fmt.Sprint([]state.ReasonCode{c.want}) {
			t.Errorf("%s/%s: queue items %v, want one: %s", c.typ, c.id, got, c.want)
		}
		var reasons []state.ReasonCode
		for _, r := range d.must(t, c.typ, c.id).State.Reasons {
			reasons = append(reasons, r.Code)
		}
		if fmt.Sprint(reasons) != fmt.Sprint([]state.ReasonCode{c.want}) {
			t.Errorf("%s/%s: entity reasons %v, want one: %s", c.typ, c.id, reasons, c.want)
		}
	}
	_, scrape := d.do(t, "GET", "/metrics", "")
	for _, line := range strings.Split(scrape, "\n") {
		for _, code := range []string{"run.delivery.invalid", "run.health.orphaned"} {
			if strings.HasPrefix(line, `watchdog_reasons_active{reason_code="`+code+`"`) && !strings.HasSuffix(line, " 0") {
				t.Errorf("watchdog_reasons_active counts a subsumed finding: %s", line)
			}
		}
	}
	d.assertCountsAgree(t)
}

// TestTruthObs10SnoozeAsAdvertised: the Snooze action's endpoint,
// method and body, sent as they are, snooze the item for a day.
func TestTruthObs10SnoozeAsAdvertised(t *testing.T) {
	// A failure window of an hour: the end's item the snooze may carry
	// over to stays in the queue while the test reads it and snoozes,
	// however slow the machine (under 4s it could age out between the
	// read and the POST, and the advertised snooze answer 404).
	d := truthStart(t, strings.Replace(truthSections, "failure_window: 4s", "failure_window: 1h", 1))
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s-10","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)))
	var it attention.Item
	testenv.Eventually(t, "the dead session in the queue", truthWait, func() (bool, string) {
		items := itemsOf(d.queue(t, ""), "session", "s-10")
		if len(items) > 0 {
			it = items[0]
		}
		return len(items) > 0, ""
	})
	d.assertCountsAgree(t)
	var snooze *attention.Action
	for i := range it.Actions {
		if it.Actions[i].ID == "snooze" {
			snooze = &it.Actions[i]
		}
	}
	if snooze == nil {
		t.Fatalf("no snooze action: %+v", it.Actions)
	}
	body, err := json.Marshal(snooze.Body)
	if err != nil {
		t.Fatal(err)
	}
	code, resp := d.do(t, snooze.Method, snooze.Endpoint, string(body))
	if code != http.StatusOK {
		t.Fatalf("%s %s %s as advertised: %d %s", snooze.Method, snooze.Endpoint, body, code, resp)
	}
	// Nothing of the session is in the queue: the snoozed item, nor the
	// end's item it carries over to.
	if its := itemsOf(d.queue(t, ""), "session", "s-10"); len(its) > 0 {
		t.Fatalf("the snoozed incident is still in the queue: %v", codesOf(its))
	}
	// The reaper may end the session (terminal_grace) at any moment: the
	// item then is the end's, and the snooze carries over to it
	// (attention.Carries), named by dismissed_as.
	got, ok := acknowledged(d.queue(t, "include_dismissed=true"), it.Fingerprint)
	if !ok || !got.Dismissed {
		t.Fatalf("include_dismissed does not show the snoozed item: %+v", got)
	}
	if left := time.Until(got.SnoozedUntil.Time); left < 23*time.Hour || left > 25*time.Hour {
		t.Fatalf("snoozed until %v, %v from now; the action says a day", got.SnoozedUntil, left)
	}
	d.assertCountsAgree(t)
}

// TestTruthObs13WarningLogged: an entity turning critical is logged
// once at warning level, naming the entity, its chain and the reason.
func TestTruthObs13WarningLogged(t *testing.T) {
	d := truthStart(t, "")
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s-13","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)))
	warnings := func() []map[string]any {
		var out []map[string]any
		for _, line := range bytes.Split([]byte(d.logs()), []byte("\n")) {
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			if m["level"] == "warn" && m["entity_type"] == "session" && m["entity_id"] == "s-13" {
				out = append(out, m)
			}
		}
		return out
	}
	testenv.Eventually(t, "a warning naming session s-13", truthWait, func() (bool, string) {
		return len(warnings()) > 0, ""
	})
	// The reaper ends it (aborted, still critical): no second line.
	testenv.Eventually(t, "the session ended by the reaper", truthWait, func() (bool, string) {
		e := d.must(t, "session", "s-13")
		return e.State.Lifecycle == "aborted", e.Display
	})
	d.assertCountsAgree(t)
	ws := warnings()
	if len(ws) != 1 {
		t.Fatalf("want one warning line for session s-13, got %d: %v", len(ws), ws)
	}
	w := ws[0]
	if w["severity"] != "critical" || !strings.Contains(fmt.Sprint(w["chain"]), "Process dead") ||
		!strings.HasPrefix(fmt.Sprint(w["reason_code"]), "run.health.") || fmt.Sprint(w["reason"]) == "" {
		t.Fatalf("the warning does not name severity, chain and reason: %v", w)
	}
}

// TestTruthObs13WarningReachesTheJournal: with stderr as the journal's
// stream (JOURNAL_STREAM names it, as systemd sets it), every line carries
// its syslog priority, so `journalctl -p warning` shows the entity's
// warning and not the daemon's info lines.
func TestTruthObs13WarningReachesTheJournal(t *testing.T) {
	d := rmtStartWith(t, false, truthSections, "JOURNAL_STREAM=")
	d.register(t, fmt.Sprintf(`{"type":"session","id":"j-13","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)))
	testenv.Eventually(t, "a priority-4 line naming session j-13", truthWait, func() (bool, string) {
		for _, line := range strings.Split(d.logs(), "\n") {
			if strings.HasPrefix(line, "<4>{") && strings.Contains(line, `"entity_id":"j-13"`) {
				return true, ""
			}
		}
		return false, d.logs()
	})
	var info, unprefixed int
	for _, line := range strings.Split(strings.TrimSpace(d.logs()), "\n") {
		switch {
		case strings.HasPrefix(line, `<6>{"level":"info"`):
			info++
		case stripPriority(line) == line:
			unprefixed++
		}
	}
	if info == 0 || unprefixed != 0 {
		t.Fatalf("want every line prefixed and the info lines at <6>: %d info, %d without a priority:\n%s", info, unprefixed, d.logs())
	}
}

// TestTruthObs1DeliveryRecurrence: a delivery finding is an occurrence of
// its own, dated by when it was first seen, not by the entity's health:
// a dismissed "artifact missing" on an ended session that clears (the
// file appears) and comes back (the file is deleted) is a new item,
// shown, although the session's health never changed.
func TestTruthObs1DeliveryRecurrence(t *testing.T) {
	d := truthStart(t, strings.Replace(truthSections, "failure_window: 4s", "failure_window: 1h", 1))
	root := t.TempDir()
	d.register(t, fmt.Sprintf(`{"type":"session","id":"s-d","lifecycle":"running","artifacts_root":%q,
		"artifacts":[{"path":"a.txt","required":true,"min_bytes":1}]}`, root))
	if code, body := d.transition(t, "session", "s-d", `{"to":"completed"}`); code != http.StatusOK {
		t.Fatalf("complete s-d: %d %s", code, body)
	}
	const fp = "session:s-d:run.delivery.missing"
	var first attention.Item
	testenv.Eventually(t, "the missing artifact in the queue, the session probed", truthWait, func() (bool, string) {
		it, ok := item(d.queue(t, ""), fp)
		first = it
		e := d.must(t, "session", "s-d")
		return ok && e.State.Health == state.HealthOK, e.Display
	})
	if code, body := d.do(t, "POST", "/api/attention/dismiss", fmt.Sprintf(`{"fingerprint":%q}`, fp)); code != http.StatusOK {
		t.Fatalf("dismiss: %d %s", code, body)
	}
	if _, ok := item(d.queue(t, ""), fp); ok {
		t.Fatal("the dismissed item is still in the queue")
	}
	health := d.must(t, "session", "s-d").State.Health

	file := filepath.Join(root, "a.txt")
	if err := os.WriteFile(file, []byte("done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the delivery passed", truthWait, func() (bool, string) {
		_, ok := item(d.queue(t, "include_dismissed=true"), fp)
		e := d.must(t, "session", "s-d")
		return !ok && e.State.Delivery == state.DeliveryPassed, e.Display
	})
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	var again attention.Item
	testenv.Eventually(t, "the recurrence in the queue without include_dismissed", truthWait, func() (bool, string) {
		it, ok := item(d.queue(t, ""), fp)
		again = it
		return ok, d.must(t, "session", "s-d").Display
	})
	if again.Dismissed || !again.FirstSeenAt.After(first.FirstSeenAt.Time) {
		t.Fatalf("the recurrence is not a new occurrence: first seen %v, again %v (dismissed %v)", first.FirstSeenAt, again.FirstSeenAt, again.Dismissed)
	}
	if h := d.must(t, "session", "s-d").State.Health; h != health {
		t.Fatalf("health moved from %s to %s meanwhile; the case is meant for a steady health", health, h)
	}
	d.assertCountsAgree(t)
}
