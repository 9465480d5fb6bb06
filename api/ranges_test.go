package api

import (
	"fmt"
	"strings"
	"testing"
)

// TestNumbersOutOfRangeAreRefused: every number of the wire's documents
// outside its range (transitions/ranges.go) is a 422 over_limit naming the
// field and the range and quoting the number exactly as it was sent (1e18
// stays 1e18), and changes nothing; the same numbers at the edges of their
// ranges are accepted. Before, pid_start_time 1e18 was stored as
// 2003764205206.8967, 9.3e18 and 1e308 were dropped with a 201,
// timeout_seconds 1e18 became 9223372036.854776 and a snooze until 1e300
// read "until 0.000 is not in the future".
func TestNumbersOutOfRangeAreRefused(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.observe("session", "s-1", "stalled", "not_expected", "run.health.stalled")
	now := e.seconds() // 2026-05-24T12:00:00Z
	fp := "session:s-1:run.health.stalled"
	reg := func(field string) string {
		return `{"type":"session","id":"s-new","lifecycle":"running",` + field + `}`
	}
	type tc struct {
		name, path, body string
		field, sent      string
		rangeSays        string
	}
	var cases []tc
	// Each number of a registration, too large and too small.
	for _, c := range []struct{ field, sent, rangeSays string }{
		{"pid", "4194305", "a pid from 1 to 4194304 (PID_MAX_LIMIT), or 0 for none"},
		{"pid", "-1", "a pid from 1 to 4194304"},
		{"pid", "1e18", "a pid from 1 to 4194304"},
		{"supervisor_pid", "9.3e18", "a pid from 1 to 4194304"},
		{"pid_start_time", "1e18", "Unix seconds from 946684800 (2000-01-01T00:00:00Z) to 1779627600 (now + 1h of clock skew), or 0 for none"},
		{"pid_start_time", "9.3e18", "Unix seconds from 946684800"},
		{"pid_start_time", "1e308", "Unix seconds from 946684800"},
		{"pid_start_time", "1e400", "Unix seconds from 946684800"},
		{"pid_start_time", "-1", "Unix seconds from 946684800"},
		{"pid_start_time", "1716517000123", "Unix seconds from 946684800"}, // milliseconds
		{"pid_start_time", "946684799.5", "Unix seconds from 946684800"},
		{"supervisor_start_time", "1.0E+18", "Unix seconds from 946684800"},
		{"timeout_seconds", "1e18", "seconds from 1 to 31536000 (365 days), or 0 for none"},
		{"timeout_seconds", "-5", "seconds from 1 to 31536000"},
		{"timeout_seconds", "31536000.001", "seconds from 1 to 31536000"},
		{"timeout_seconds", "1e-7", "seconds from 1 to 31536000"},
	} {
		cases = append(cases, tc{"register " + c.field + " " + c.sent, "/api/v1/entities", reg(`"` + c.field + `":` + c.sent), c.field, c.sent, c.rangeSays})
	}
	cases = append(cases,
		tc{"register schedule last_fired_at", "/api/v1/entities",
			`{"type":"schedule","id":"c-1","schedule":{"cron":"@every 1m","last_fired_at":1e18}}`,
			"schedule.last_fired_at", "1e18", "Unix seconds from 946684800"},
		tc{"register artifact min_bytes", "/api/v1/entities",
			`{"type":"session","id":"s-new","artifacts_root":"/srv/x","artifacts":[{"path":"a"},{"path":"b","min_bytes":9007199254740992}]}`,
			"artifacts[1].min_bytes", "9007199254740992", "bytes from 0 to 9007199254740991 (2^53-1)"},
		tc{"register artifact min_bytes negative", "/api/v1/entities",
			`{"type":"session","id":"s-new","artifacts_root":"/srv/x","artifacts":[{"path":"a","min_bytes":-1}]}`,
			"artifacts[0].min_bytes", "-1", "bytes from 0"},
		// Keys match case-insensitively, as encoding/json matches them.
		tc{"register upper-case key", "/api/v1/entities", reg(`"PID_Start_Time":1e18`), "pid_start_time", "1e18", "Unix seconds"},
		tc{"transition timeout_seconds", "/api/v1/entities/session/s-1/transitions",
			`{"to":"timed_out","reason":{"code":"run.timed_out.deadline"},"timeout_seconds":1e18}`,
			"timeout_seconds", "1e18", "seconds from 1 to 31536000 (365 days)"},
		tc{"transition elapsed_seconds", "/api/v1/entities/session/s-1/transitions",
			`{"to":"timed_out","reason":{"code":"run.timed_out.deadline"},"timeout_seconds":60,"elapsed_seconds":-3}`,
			"elapsed_seconds", "-3", "seconds after 0 up to 3155760000 (36525 days), or 0 for none"},
		tc{"transition evidence fetched_at", "/api/v1/entities/session/s-1/transitions",
			`{"to":"failed","reason":{"code":"run.failed.exit_nonzero","evidence":[{"kind":"tool_result","fetched_at":2e9}]}}`,
			"reason.evidence[0].fetched_at", "2e9", "Unix seconds from 946684800"},
		tc{"snooze until 1e300", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":1e300}`, fp),
			"until", "1e300", "Unix seconds after 1779624000 (now) up to 1811160000 (now + 365 days)"},
		tc{"snooze until a year and a second", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":%.0f}`, fp, now+365*86400+1),
			"until", fmt.Sprintf("%.0f", now+365*86400+1), "Unix seconds after 1779624000 (now)"},
		tc{"snooze until past", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"until":1}`, fp),
			"until", "1", "Unix seconds after 1779624000 (now)"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.snapshot()
			r := e.do("POST", c.path, c.body)
			if r.status != 422 {
				t.Fatalf("status %d, want 422: %s", r.status, r.body)
			}
			eb := r.errorBody(t)
			want := c.field + ": " + c.sent + " is out of range: want " + c.rangeSays
			if eb.Cause != "over_limit" || !strings.HasPrefix(eb.Error, want) {
				t.Errorf("error %+v, want cause over_limit and %q", eb, want)
			}
			e.assertUnchanged(before, c.name)
		})
	}

	// The edges of each range are in it.
	for _, c := range []struct{ path, body string }{
		{"/api/v1/entities", reg(`"pid":4194304,"pid_start_time":946684800,"supervisor_pid":1,"supervisor_start_time":1779627600,"timeout_seconds":31536000`)},
		{"/api/v1/entities", `{"type":"session","id":"s-edge","pid":0,"pid_start_time":0,"timeout_seconds":0,"artifacts_root":"/x","artifacts":[{"path":"a","min_bytes":9007199254740991}]}`},
		{"/api/v1/entities/session/s-1/transitions", `{"to":"timed_out","reason":{"code":"run.timed_out.deadline"},"timeout_seconds":31536000,"elapsed_seconds":3155760000}`},
	} {
		if r := e.do("POST", c.path, c.body); r.status != 200 && r.status != 201 {
			t.Errorf("%s %s: %d %s", c.path, c.body, r.status, r.body)
		}
	}
}

// TestSnoozeAtTheEdgeOfItsRange: a snooze a year ahead, to the second, is
// accepted and stored as sent.
func TestSnoozeAtTheEdgeOfItsRange(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.observe("session", "s-1", "stalled", "not_expected", "run.health.stalled")
	until := e.seconds() + 365*86400
	e.snooze("session:s-1:run.health.stalled", until)
	ds, err := e.st.Dismissals(t.Context())
	if err != nil || len(ds) != 1 {
		t.Fatalf("dismissals %v, %v", ds, err)
	}
	for _, d := range ds {
		if got := float64(d.SnoozedUntil.Unix()); got != until {
			t.Errorf("snoozed until %v, want %v", got, until)
		}
	}
}
