package api

import (
	"fmt"
	"strings"
	"testing"

	"watchdog/state"
	"watchdog/store"
	"watchdog/wire"
)

// TestTriageLogRead: GET /api/attention/triage pages the triage log newest
// first, by before and limit, each row as written (a bulk request's rows
// sharing its batch); a read, with the read scope; bad parameters are one 400
// naming the parameter.
func TestTriageLogRead(t *testing.T) {
	e := newEnv(t, withToken("sekrit"))
	for _, id := range []string{"s-1", "s-2", "s-3"} {
		e.register("session", id, "running")
		e.observe("session", id, state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
	}
	now := e.seconds()
	// A snooze of two in one request, then a dismissal of the third.
	e.post("/api/attention/snooze", `{"fingerprints":["session:s-1:run.health.stalled","session:s-2:run.health.stalled"],"for":3600}`, 200)
	e.post("/api/attention/dismiss", `{"fingerprint":"session:s-3:run.health.stalled"}`, 200)

	read := func(query string) wire.TriagePage {
		t.Helper()
		r := e.do("GET", "/api/attention/triage"+query, "")
		if r.status != 200 {
			t.Fatalf("GET /api/attention/triage%s: %d %s", query, r.status, r.body)
		}
		var p wire.TriagePage
		e.decode(r, &p)
		return p
	}
	all := read("")
	if len(all.Items) != 3 || all.NextBefore != 0 {
		t.Fatalf("the whole log: %+v", all)
	}
	dis, s2, s1 := all.Items[0], all.Items[1], all.Items[2]
	if dis.Action != store.TriageDismiss || dis.Fingerprint != "session:s-3:run.health.stalled" || dis.SnoozedUntil != nil ||
		dis.Actor != "token:admin" || dis.EntityType != "session" || dis.EntityID != "s-3" || dis.ReasonCode != "run.health.stalled" {
		t.Errorf("newest row: %+v", dis)
	}
	for _, r := range []wire.TriageEntry{s1, s2} {
		if r.Action != store.TriageSnooze || r.SnoozedUntil == nil || !r.SnoozedUntil.Equal(unixAt(now+3600)) || !r.At.Equal(unixAt(now)) || r.Batch != s1.Batch {
			t.Errorf("snoozed row: %+v", r)
		}
	}
	if s1.Batch == dis.Batch || !(dis.Seq > s2.Seq && s2.Seq > s1.Seq) {
		t.Errorf("order or batches: %+v", all.Items)
	}
	// The raw document names a dismissal's end null, as documented.
	if body := string(e.do("GET", "/api/attention/triage?limit=1", "").body); !strings.Contains(body, `"snoozed_until":null`) || !strings.Contains(body, `"next_before":`) {
		t.Errorf("raw page: %s", body)
	}

	// Paging: two, then the one left, by next_before.
	first := read("?limit=2")
	if len(first.Items) != 2 || first.Items[0].Seq != dis.Seq || first.NextBefore != s2.Seq {
		t.Fatalf("first page: %+v", first)
	}
	rest := read(fmt.Sprintf("?limit=2&before=%d", first.NextBefore))
	if len(rest.Items) != 1 || rest.Items[0].Seq != s1.Seq || rest.NextBefore != 0 {
		t.Errorf("second page: %+v", rest)
	}
	if past := read(fmt.Sprintf("?before=%d", s1.Seq)); len(past.Items) != 0 || past.Items == nil {
		t.Errorf("before the oldest: %+v (want an empty list, not null)", past)
	}

	// Failure cases: one 400 naming the parameter.
	for _, c := range []struct{ query, says string }{
		{"?limit=0", "limit"},
		{fmt.Sprintf("?limit=%d", wire.MaxTriagePage+1), "limit"},
		{"?limit=ten", "limit"},
		{"?before=-1", "before"},
		{"?before=abc", "before"},
	} {
		t.Run(c.query, func(t *testing.T) {
			r := e.do("GET", "/api/attention/triage"+c.query, "")
			if r.status != 400 {
				t.Fatalf("%d %s, want 400", r.status, r.body)
			}
			if b := r.errorBody(t); b.Cause != "bad_request" || !strings.Contains(b.Error, c.says) {
				t.Errorf("%+v, want bad_request naming %q", b, c.says)
			}
		})
	}
}
