package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"watchdog/state"
	"watchdog/store"
)

// TestAttentionBulkTriage: a snooze or dismissal of several items (a list
// of fingerprints or a cluster) is all or none, answers every row, and
// logs one triage entry per item with the actor under one batch; the
// single-fingerprint answer is unchanged.
func TestAttentionBulkTriage(t *testing.T) {
	e := newEnv(t)
	var stalled []string
	for _, id := range []string{"s-1", "s-2", "s-3", "s-4", "s-5", "s-6"} {
		e.register("session", id, "running")
		e.observe("session", id, state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
		stalled = append(stalled, "session:"+id+":run.health.stalled")
	}
	e.register("session", "idle", "running")
	e.observe("session", "idle", state.HealthIdle, state.DeliveryNotExpected, state.RunHealthIdle)
	list := func(fps ...string) string {
		q := make([]string, len(fps))
		for i, fp := range fps {
			q[i] = fmt.Sprintf("%q", fp)
		}
		return "[" + strings.Join(q, ",") + "]"
	}
	now := e.seconds()

	// Failure cases: each changes nothing, the triage log included.
	for _, c := range []struct {
		name, path, body string
		status           int
		cause, says      string
	}{
		{"two selectors", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"cluster":"run.health.stalled","for":60}`, stalled[0]), 400, "bad_request", "exactly one of"},
		{"no selector", "/api/attention/dismiss", `{}`, 400, "bad_request", "exactly one of"},
		{"an empty list", "/api/attention/dismiss", `{"fingerprints":[]}`, 400, "bad_request", "no fingerprint"},
		{"until and for", "/api/attention/snooze", fmt.Sprintf(`{"cluster":"run.health.stalled","until":%f,"for":60}`, now+60), 400, "bad_request", "not both"},
		{"neither until nor for", "/api/attention/snooze", `{"cluster":"run.health.stalled"}`, 400, "bad_request", `"for"`},
		{"for zero", "/api/attention/snooze", `{"cluster":"run.health.stalled","for":0}`, 422, "over_limit", "for"},
		{"for over a year", "/api/attention/snooze", `{"cluster":"run.health.stalled","for":31536001}`, 422, "over_limit", "for"},
		{"for as text", "/api/attention/snooze", `{"cluster":"run.health.stalled","for":"4h"}`, 400, "bad_request", ""},
		{"one malformed", "/api/attention/snooze", `{"fingerprints":` + list(stalled[0], "s-2") + `,"for":3600}`, 400, "bad_request", `"s-2"`},
		{"one unknown among six", "/api/attention/snooze", `{"fingerprints":` + list(append(slices.Clone(stalled), "session:s-1:run.health.idle")...) + `,"for":3600}`, 404, "not_found", `"session:s-1:run.health.idle"`},
		{"dismiss one unknown", "/api/attention/dismiss", `{"fingerprints":` + list(stalled[0], "session:nobody:run.health.stalled") + `}`, 404, "not_found", "nothing was snoozed or dismissed"},
		{"a cluster of no code", "/api/attention/snooze", `{"cluster":"cluster_run.health.nope","for":60}`, 400, "bad_request", "names no reason code"},
		{"a cluster with no item", "/api/attention/dismiss", `{"cluster":"cluster_run.failed.signal"}`, 404, "not_found", "no item"},
		{"a list as a string", "/api/attention/dismiss", `{"fingerprints":"a,b"}`, 400, "bad_request", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.snapshot()
			r := e.do("POST", c.path, c.body)
			if r.status != c.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, c.status)
			}
			if b := r.errorBody(t); b.Cause != c.cause || !strings.Contains(b.Error, c.says) {
				t.Errorf("%+v, want %s saying %q", b, c.cause, c.says)
			}
			e.assertUnchanged(before, c.name)
		})
	}

	// A cluster snoozed for 4h: the six stalled items, one batch, six
	// entries by the operator; the idle item stays.
	r := e.post("/api/attention/snooze", `{"cluster":"cluster_run.health.stalled","for":14400}`, 200)
	var got Triaged
	e.decode(r, &got)
	if got.Count != 6 || len(got.Dismissals) != 6 || got.Batch == "" {
		t.Fatalf("%+v", got)
	}
	for _, d := range got.Dismissals {
		if d.SnoozedUntil == nil || !d.SnoozedUntil.Equal(unixAt(now+14400)) || d.DismissedBy != "operator" || d.ReasonCode != "run.health.stalled" {
			t.Errorf("%+v", d)
		}
	}
	if q := fingerprints(e.queue("")); fmt.Sprint(q) != "[session:idle:run.health.idle]" {
		t.Errorf("the queue after the cluster snooze: %v", q)
	}
	log, err := e.st.TriageLog(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for _, l := range log {
		if l.Batch != got.Batch || l.By != "operator" || l.Action != store.TriageSnooze {
			t.Errorf("log entry %+v", l)
		}
		logged = append(logged, l.Fingerprint)
	}
	slices.Sort(logged)
	if fmt.Sprint(logged) != fmt.Sprint(stalled) {
		t.Errorf("logged %v, want %v", logged, stalled)
	}

	// A cluster whose items are all snoozed has nothing left to snooze;
	// a list of them may be dismissed (a snooze replaced by a dismissal).
	if r := e.do("POST", "/api/attention/snooze", `{"cluster":"run.health.stalled","for":60}`); r.status != 404 {
		t.Errorf("an all-snoozed cluster: %d %s", r.status, r.body)
	}
	r = e.post("/api/attention/dismiss", `{"fingerprints":`+list(stalled[0], stalled[1], stalled[0])+`}`, 200)
	e.decode(r, &got)
	if got.Count != 2 || got.Dismissals[0].SnoozedUntil != nil {
		t.Errorf("dismissed %+v", got)
	}
	q := e.queue("?include_dismissed=true")
	for _, it := range q.Items {
		if it.Fingerprint == stalled[0] && !it.SnoozedUntil.IsZero() {
			t.Errorf("%s still snoozed after its dismissal: %+v", it.Fingerprint, it)
		}
	}
	// The one-fingerprint answer is the dismissal itself, as before.
	r = e.post("/api/attention/snooze", `{"fingerprint":"session:idle:run.health.idle","for":60}`, 200)
	var one Dismissal
	e.decode(r, &one)
	if one.Fingerprint != "session:idle:run.health.idle" || one.SnoozedUntil == nil || !one.SnoozedUntil.Equal(unixAt(now+60)) {
		t.Errorf("one: %+v", one)
	}
	if log, _ := e.st.TriageLog(t.Context(), 0, 100); len(log) != 6+2+1 {
		t.Errorf("triage log: %d entries, want 9", len(log))
	}
}
