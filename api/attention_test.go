package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/docs"
	"watchdog/state"
	"watchdog/wire"
)

func (e *env) queue(query string) attention.Queue {
	e.t.Helper()
	r := e.do("GET", "/api/attention"+query, "")
	if r.status != 200 {
		e.t.Fatalf("GET /api/attention%s: %d %s", query, r.status, r.body)
	}
	var q attention.Queue
	e.decode(r, &q)
	return q
}

func fingerprints(q attention.Queue) []string {
	out := []string{}
	for _, it := range q.Items {
		fp := it.Fingerprint
		if it.Dismissed {
			fp += " (dismissed)"
		}
		out = append(out, fp)
	}
	return out
}

func (e *env) post(path, body string, want int) response {
	e.t.Helper()
	r := e.do("POST", path, body)
	if r.status != want {
		e.t.Fatalf("POST %s %s: %d, want %d: %s", path, body, r.status, want, r.body)
	}
	return r
}

func (e *env) dismiss(fp string, clear bool) {
	e.t.Helper()
	e.post("/api/attention/dismiss", fmt.Sprintf(`{"fingerprint":%q,"clear_on_status_change":%v}`, fp, clear), 200)
}

func (e *env) snooze(fp string, until float64) {
	e.t.Helper()
	e.post("/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":%f}`, fp, until), 200)
}

func TestAttentionQueueShape(t *testing.T) {
	e := newEnv(t)
	tick := func() { e.clock.Advance(time.Minute) }
	// Critical: a failed run, and the same stall on three entity types.
	e.register("session", "s-fail", "running")
	e.move("session", "s-fail", "failed", state.RunFailedExitNonzero)
	tick()
	for _, ref := range [][2]string{{"session", "s-stall"}, {"invocation", "i-stall"}, {"subagent", "sa-stall"}} {
		e.register(ref[0], ref[1], "running")
		e.observe(ref[0], ref[1], state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
		tick()
	}
	// Warning, info, and three that need nobody.
	e.register("session", "s-idle", "running")
	e.observe("session", "s-idle", state.HealthIdle, state.DeliveryNotExpected, state.RunHealthIdle)
	tick()
	e.register("session", "s-slow", "running")
	e.observe("session", "s-slow", state.HealthRunning, state.DeliveryNotExpected, state.RunHealthSlow)
	tick()
	e.register("session", "s-fine", "running")
	e.observe("session", "s-fine", state.HealthRunning, state.DeliveryNotExpected)
	e.register("session", "s-done", "running")
	e.move("session", "s-done", "completed", state.RunCompletedExitZero)
	e.registerLegacy("session", "s-legacy")

	q := e.queue("")
	want := []string{
		"subagent:sa-stall:run.health.stalled",
		"invocation:i-stall:run.health.stalled",
		"session:s-stall:run.health.stalled",
		"session:s-fail:run.failed.exit_nonzero",
		"session:s-idle:run.health.idle",
		"session:s-slow:run.health.slow",
	}
	if got := fingerprints(q); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queue order (severity, then most recent):\n got %v\nwant %v", got, want)
	}
	if q.Total != 6 || q.BySeverity[state.SeverityCritical] != 4 || q.BySeverity[state.SeverityWarning] != 1 || q.BySeverity[state.SeverityInfo] != 1 {
		t.Errorf("total %d, by_severity %v", q.Total, q.BySeverity)
	}
	if !q.GeneratedAt.Equal(unixAt(e.seconds())) {
		t.Errorf("generated_at %v, now %v", q.GeneratedAt, e.seconds())
	}
	// The same reason clusters across entity types.
	for _, it := range q.Items[:3] {
		if it.ClusterID != "cluster_run.health.stalled" || it.ClusterSize != 3 {
			t.Errorf("%s: cluster %s size %d", it.Fingerprint, it.ClusterID, it.ClusterSize)
		}
	}
	fail := q.Items[3]
	if fail.Severity != state.SeverityCritical || fail.Status != "failed" || fail.ClusterSize != 1 ||
		fail.Entity != (attention.Entity{Type: "session", ID: "s-fail", Label: "label of s-fail"}) ||
		fail.Reason.Code != state.RunFailedExitNonzero || fail.Reason.Summary != "moved to failed" ||
		!strings.HasPrefix(fail.ID, "attn_") || fail.FirstSeenAt != fail.LastUpdatedAt {
		t.Errorf("failed item: %+v", fail)
	}
	stall := q.Items[2]
	if len(stall.Reason.EvidenceRefs) != 1 || stall.Reason.EvidenceRefs[0].Detail != "seen by the test" || stall.Reason.Summary != "found run.health.stalled" {
		t.Errorf("stalled item reason: %+v", stall.Reason)
	}
	if len(stall.Actions) != 3 || stall.Actions[0].Href != "/api/v1/entities/session/s-stall" ||
		stall.Actions[1].Endpoint != "/api/attention/snooze" || stall.Actions[2].Endpoint != "/api/attention/dismiss" || !stall.Actions[2].RequiresConfirm {
		t.Errorf("actions: %+v", stall.Actions)
	}
	// The inspect action really opens the entity.
	if r := e.do("GET", stall.Actions[0].Href, ""); r.status != 200 {
		t.Errorf("inspect href: %d", r.status)
	}
	// Item ids are stable across polls.
	if again := e.queue(""); again.Items[0].ID != q.Items[0].ID {
		t.Errorf("item id changed between polls")
	}

	// Filters: severity, and the limit with cluster_size over the whole
	// queue, not the page.
	if got := fingerprints(e.queue("?severity=warning,info")); fmt.Sprint(got) != fmt.Sprint(want[4:]) {
		t.Errorf("severity filter: %v", got)
	}
	page := e.queue("?limit=1")
	if len(page.Items) != 1 || page.Total != 6 || page.Items[0].ClusterSize != 3 || page.BySeverity[state.SeverityCritical] != 4 {
		t.Errorf("page of 1: %d items, total %d, cluster_size %d, by_severity %v", len(page.Items), page.Total, page.Items[0].ClusterSize, page.BySeverity)
	}

	// The gauge counts the same queue.
	for sev, n := range q.BySeverity {
		if v := e.gaugeSum("watchdog_attention_items", "severity", string(sev)); int(v) != n {
			t.Errorf("watchdog_attention_items{severity=%q} = %v, queue has %d", sev, v, n)
		}
	}
}

func TestAttentionQueryErrors(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"?severity=neutral", "?severity=dire", "?limit=0", "?limit=501", "?limit=ten", "?include_dismissed=perhaps"} {
		r := e.do("GET", "/api/attention"+q, "")
		if r.status != 400 || r.errorBody(t).Cause != "bad_request" {
			t.Errorf("GET /api/attention%s: %d %s", q, r.status, r.body)
		}
	}
	if q := e.queue("?limit=500&severity=critical&include_dismissed=1&unrelated=x"); q.Total != 0 || len(q.Items) != 0 || len(q.BySeverity) != 3 {
		t.Errorf("empty queue: %+v", q)
	}
}

// TestAttentionNewReasonCodeIsNewItem: a dismissal hides one fingerprint;
// a new reason on the same entity surfaces at once.
func TestAttentionNewReasonCodeIsNewItem(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.observe("session", "s-1", state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	e.dismiss("session:s-1:run.health.stalled", true)
	if q := e.queue(""); q.Total != 0 {
		t.Fatalf("dismissed item still shown: %v", fingerprints(q))
	}
	e.observe("session", "s-1", state.HealthStalled, state.DeliveryMissing, state.RunHealthStalled, state.RunDeliveryMissing)
	if got := fingerprints(e.queue("")); fmt.Sprint(got) != "[session:s-1:run.delivery.missing]" {
		t.Errorf("after a new reason: %v", got)
	}
	if got := fingerprints(e.queue("?include_dismissed=true")); len(got) != 2 {
		t.Errorf("with include_dismissed: %v", got)
	}
}

// TestAttentionStatusChangeClearsDismissal: clear_on_status_change (the
// default) shows the item again as soon as the lifecycle changes, at read
// time, with no vacuum; clear_on_status_change=false survives it.
func TestAttentionStatusChangeClearsDismissal(t *testing.T) {
	e := newEnv(t)
	e.register("agent", "a-clear", "idle")
	e.register("agent", "a-keep", "idle")
	for _, id := range []string{"a-clear", "a-keep"} {
		e.observe("agent", id, state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	}
	e.dismiss("agent:a-clear:run.health.stalled", true)
	e.dismiss("agent:a-keep:run.health.stalled", false)
	if q := e.queue(""); q.Total != 0 {
		t.Fatalf("dismissed items shown: %v", fingerprints(q))
	}
	e.move("agent", "a-clear", "busy", "")
	e.move("agent", "a-keep", "busy", "")
	q := e.queue("")
	if got := fingerprints(q); fmt.Sprint(got) != "[agent:a-clear:run.health.stalled]" {
		t.Errorf("after idle -> busy: %v", got)
	}
	// Dismissing again records the new status, and hides it again.
	e.dismiss("agent:a-clear:run.health.stalled", true)
	if q := e.queue(""); q.Total != 0 {
		t.Errorf("re-dismissed item shown: %v", fingerprints(q))
	}
	ds, _ := e.st.Dismissals(t.Context())
	if d := ds["agent:a-clear:run.health.stalled"]; d.StatusAtDismissal != "busy" {
		t.Errorf("status_at_dismissal %q, want busy", d.StatusAtDismissal)
	}
	// Vacuum agrees with the read path: it drops nothing that still hides.
	if n, err := e.st.VacuumDismissals(t.Context(), unixAt(e.seconds())); err != nil || n != 0 {
		t.Errorf("vacuum: %d %v", n, err)
	}
}

// TestAttentionExpiredSnoozeDoesNotHide: a snooze hides until its time,
// then the item is back, vacuum or not; re-snoozing extends it.
func TestAttentionExpiredSnoozeDoesNotHide(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.observe("session", "s-1", state.HealthIdle, state.DeliveryNotExpected, state.RunHealthIdle)
	fp := "session:s-1:run.health.idle"
	until := e.seconds() + 60
	e.snooze(fp, until)
	if q := e.queue(""); q.Total != 0 {
		t.Fatalf("snoozed item shown: %v", fingerprints(q))
	}
	marked := e.queue("?include_dismissed=true")
	if len(marked.Items) != 1 || !marked.Items[0].Dismissed || !marked.Items[0].SnoozedUntil.Equal(unixAt(until)) {
		t.Errorf("include_dismissed: %+v", marked.Items)
	}
	if v := e.gaugeSum("watchdog_attention_items", "severity", "warning"); v != 0 {
		t.Errorf("gauge counts a snoozed item: %v", v)
	}
	e.clock.Advance(61 * time.Second)
	if got := fingerprints(e.queue("")); fmt.Sprint(got) != "["+fp+"]" {
		t.Errorf("after the snooze expired: %v", got)
	}
	if v := e.gaugeSum("watchdog_attention_items", "severity", "warning"); v != 1 {
		t.Errorf("gauge after the snooze expired: %v", v)
	}
	e.snooze(fp, e.seconds()+3600)
	if q := e.queue(""); q.Total != 0 {
		t.Errorf("re-snoozed item shown: %v", fingerprints(q))
	}
}

// TestAttentionFailureWindow: an ended failure leaves the queue
// failure_window after it ended; open problems stay.
func TestAttentionFailureWindow(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-fail", "running")
	e.move("session", "s-fail", "failed", state.RunFailedExitNonzero)
	e.register("session", "s-late", "running")
	e.move("session", "s-late", "timed_out", state.RunTimedOutDeadline)
	e.register("session", "s-stall", "running")
	e.observe("session", "s-stall", state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	if q := e.queue(""); q.Total != 3 {
		t.Fatalf("fresh: %v", fingerprints(q))
	}
	e.clock.Advance(23 * time.Hour)
	if q := e.queue(""); q.Total != 3 {
		t.Errorf("after 23h: %v", fingerprints(q))
	}
	e.clock.Advance(2 * time.Hour)
	if got := fingerprints(e.queue("")); fmt.Sprint(got) != "[session:s-stall:run.health.stalled]" {
		t.Errorf("after 25h: %v", got)
	}
	// Snoozing an aged-out item is refused: there is nothing to snooze.
	if r := e.do("POST", "/api/attention/dismiss", `{"fingerprint":"session:s-fail:run.failed.exit_nonzero"}`); r.status != 404 {
		t.Errorf("dismiss an aged-out item: %d %s", r.status, r.body)
	}

	short := newEnv(t, withWindow(time.Hour))
	short.register("session", "s-fail", "running")
	short.move("session", "s-fail", "failed", state.RunFailedExitNonzero)
	short.clock.Advance(61 * time.Minute)
	if q := short.queue(""); q.Total != 0 {
		t.Errorf("1h window after 61m: %v", fingerprints(q))
	}
	if v := short.metric("watchdog_attention_items", "severity", "critical"); v != 0 {
		t.Errorf("the gauge ignores the configured window: %v", v)
	}
}

func TestAttentionDismissResponse(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.observe("session", "s-1", state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	r := e.post("/api/attention/dismiss", `{"fingerprint":"session:s-1:run.health.stalled"}`, 200)
	var d Dismissal
	e.decode(r, &d)
	if d.EntityType != "session" || d.EntityID != "s-1" || d.ReasonCode != "run.health.stalled" || d.StatusAtDismissal != "running" ||
		d.SnoozedUntil != nil || !d.ClearOnStatusChange || d.DismissedBy != "operator" || !d.DismissedAt.Equal(unixAt(e.seconds())) {
		t.Errorf("dismissal: %+v", d)
	}
	until := e.seconds() + 10
	r = e.post("/api/attention/snooze", fmt.Sprintf(`{"fingerprint":"session:s-1:run.health.stalled","until":%f,"clear_on_status_change":false}`, until), 200)
	e.decode(r, &d)
	if d.SnoozedUntil == nil || !d.SnoozedUntil.Equal(unixAt(until)) || d.ClearOnStatusChange {
		t.Errorf("snooze: %+v", d)
	}
	ds, _ := e.st.Dismissals(t.Context())
	if len(ds) != 1 {
		t.Errorf("%d dismissal rows for one fingerprint", len(ds))
	}
}

func TestAttentionSnoozeDismissRejectAndChangeNothing(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.observe("session", "s-1", state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	e.register("session", "s-ok", "running")
	e.register("session", "a:b", "running")
	e.observe("session", "a:b", state.HealthIdle, state.DeliveryNotExpected, state.RunHealthIdle)
	now := e.seconds()
	fp := "session:s-1:run.health.stalled"
	cases := []struct {
		name, path, body string
		status           int
		cause            string
	}{
		// Failure cases: the document.
		{"snooze malformed", "/api/attention/snooze", `{"fingerprint":`, 400, "bad_request"},
		{"snooze unknown field", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":%f,"for":"1d"}`, fp, now+60), 400, "bad_request"},
		{"snooze without until", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q}`, fp), 400, "bad_request"},
		{"snooze in the past", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":%f}`, fp, now-1), 422, "over_limit"},
		{"snooze until now", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":%f}`, fp, now), 422, "over_limit"},
		{"snooze until as text", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":"tomorrow"}`, fp), 400, "bad_request"},
		{"dismiss empty", "/api/attention/dismiss", ``, 400, "bad_request"},
		{"dismiss malformed fingerprint", "/api/attention/dismiss", `{"fingerprint":"s-1"}`, 400, "bad_request"},
		{"dismiss fingerprint without code", "/api/attention/dismiss", `{"fingerprint":"session:s-1:"}`, 400, "bad_request"},
		{"dismiss too large", "/api/attention/dismiss", `{"fingerprint":"` + strings.Repeat("x", wire.MaxBody) + `"}`, 413, "too_large"},
		// Failure cases: nothing to dismiss.
		{"unknown entity", "/api/attention/dismiss", `{"fingerprint":"session:nobody:run.health.stalled"}`, 404, "not_found"},
		{"unknown type", "/api/attention/dismiss", `{"fingerprint":"spaceship:s-1:run.health.stalled"}`, 404, "not_found"},
		{"neutral entity", "/api/attention/dismiss", `{"fingerprint":"session:s-ok:run.health.stalled"}`, 404, "not_found"},
		{"code the entity lacks", "/api/attention/dismiss", `{"fingerprint":"session:s-1:run.health.idle"}`, 404, "not_found"},
		{"snooze unknown", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":"session:s-1:run.health.idle","until":%f}`, now+60), 404, "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.snapshot()
			r := e.do("POST", c.path, c.body)
			if r.status != c.status || r.errorBody(t).Cause != c.cause {
				t.Errorf("%d %s, want %d %s", r.status, r.body, c.status, c.cause)
			}
			e.assertUnchanged(before, c.name)
		})
	}
	// An entity id with colons still has a fingerprint that works.
	e.dismiss("session:a:b:run.health.idle", true)
	if got := fingerprints(e.queue("")); fmt.Sprint(got) != "["+fp+"]" {
		t.Errorf("after dismissing the colon id: %v", got)
	}

	// A store that fails the write: 500, and the queue is as it was.
	broken := newEnv(t)
	broken.register("session", "s-1", "running")
	broken.observe("session", "s-1", state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	failing := newEnvWithStore(t, broken, failingStore{broken.st})
	before := broken.snapshot()
	if r := failing.do("POST", "/api/attention/dismiss", `{"fingerprint":"`+fp+`"}`); r.status != 500 || r.errorBody(t).Cause != "internal" {
		t.Errorf("failing store: %d %s", r.status, r.body)
	}
	broken.assertUnchanged(before, "a failed dismissal write")
}

// TestAttentionRunbook: each queue item carries its reason code's
// runbook link and Do line, docs.For's, the page's and the pushed
// alerts' rule: the configured runbook_url's section when set, else the
// daemon's own /runbook, and a reload moves it.
func TestAttentionRunbook(t *testing.T) {
	for _, tc := range []struct {
		name   string
		base   string // Options.RunbookURL
		reload *string
		want   string // the link's base
	}{
		{"local", "", nil, "/runbook"},
		{"published", "https://wiki.example/watchdog", nil, "https://wiki.example/watchdog"},
		{"reloaded to local", "https://wiki.example/watchdog", ptr(""), "/runbook"},
		{"reloaded to published", "", ptr("https://runbooks.example/wd#"), "https://runbooks.example/wd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.RunbookURL = tc.base })
			if tc.reload != nil {
				e.h.SetRunbookURL(*tc.reload)
			}
			e.register("session", "s-fail", "running")
			e.move("session", "s-fail", "failed", state.RunFailedExitNonzero)
			e.register("session", "s-stall", "running")
			e.observe("session", "s-stall", state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
			q := e.queue("")
			if len(q.Items) != 2 {
				t.Fatalf("queue %v, want the two items", fingerprints(q))
			}
			for _, it := range q.Items {
				code := string(it.Reason.Code)
				sec, ok := docs.ForCode(code)
				if !ok {
					t.Fatalf("%s has no runbook section", code)
				}
				if want := tc.want + "#" + code; it.RunbookURL != want {
					t.Errorf("%s: runbook_url %q, want %q", it.Fingerprint, it.RunbookURL, want)
				}
				if it.Do != sec.Do || it.Do == "" {
					t.Errorf("%s: do %q, want the runbook's %q", it.Fingerprint, it.Do, sec.Do)
				}
			}
			// The wire names, as documented.
			body := string(e.do("GET", "/api/attention", "").body)
			for _, key := range []string{`"runbook_url":`, `"do":`} {
				if !strings.Contains(body, key) {
					t.Errorf("no %s in %s", key, body)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
