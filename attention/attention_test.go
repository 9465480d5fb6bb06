package attention

import (
	"fmt"
	"net/url"
	"reflect"
	"testing"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

func TestParseFingerprint(t *testing.T) {
	cases := []struct {
		fp, typ, id, code string
		ok                bool
	}{
		{"session:s-1:run.health.stalled", "session", "s-1", "run.health.stalled", true},
		{"session:a:b:c:run.health.idle", "session", "a:b:c", "run.health.idle", true},
		// Failure cases.
		{"", "", "", "", false},
		{"session", "", "", "", false},
		{"session:s-1", "", "", "", false},
		{":s-1:run.health.idle", "", "", "", false},
		{"session::run.health.idle", "", "", "", false},
		{"session:s-1:", "", "", "", false},
	}
	for _, c := range cases {
		typ, id, code, err := ParseFingerprint(c.fp)
		if (err == nil) != c.ok || typ != c.typ || id != c.id || string(code) != c.code {
			t.Errorf("ParseFingerprint(%q) = %q %q %q %v", c.fp, typ, id, code, err)
		}
		if c.ok && Fingerprint(typ, id, code) != c.fp {
			t.Errorf("round trip of %q", c.fp)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q := Query{Severities: []state.Severity{state.SeverityCritical, state.SeverityInfo}, Limit: 7, IncludeDismissed: true}
	got, err := ParseQuery(url.Values{"severity": {"critical,info"}, "limit": {"7"}, "include_dismissed": {"true"}})
	if err != nil || !reflect.DeepEqual(got, q) {
		t.Errorf("parse: %+v %v", got, err)
	}
	def, err := ParseQuery(url.Values{})
	if err != nil || def.Limit != DefaultLimit || def.Severities != nil || def.IncludeDismissed {
		t.Errorf("defaults: %+v %v", def, err)
	}
	dup, err := ParseQuery(url.Values{"severity": {"warning, warning"}})
	if err != nil || len(dup.Severities) != 1 {
		t.Errorf("duplicate severity: %+v %v", dup, err)
	}
}

func TestCodes(t *testing.T) {
	cases := []struct {
		name       string
		typ        string
		outcome    string
		transition state.ReasonCode
		findings   []state.ReasonCode
		h          state.Health
		d          state.Delivery
		want       []state.ReasonCode
	}{
		{"transition then findings, once each", "session", "failed", state.RunFailedExitNonzero,
			[]state.ReasonCode{state.RunHealthStaleLock, state.RunFailedExitNonzero}, state.HealthDegraded, state.DeliveryNotExpected,
			[]state.ReasonCode{state.RunFailedExitNonzero, state.RunHealthStaleLock}},
		{"a harmless outcome's reason is not the problem", "session", "completed", state.RunCompletedExitZero,
			[]state.ReasonCode{state.RunDeliveryMissing}, state.HealthOK, state.DeliveryMissing,
			[]state.ReasonCode{state.RunDeliveryMissing}},
		{"an open entity's transition reason counts", "play", "", state.PlayBlockedDependencyFailed,
			nil, state.HealthStalled, state.DeliveryNotExpected, []state.ReasonCode{state.PlayBlockedDependencyFailed}},
		{"no reason: the health code, when registered", "session", "", "", nil, state.HealthStalled, state.DeliveryNotExpected,
			[]state.ReasonCode{state.RunHealthStalled}},
		{"no reason: the type's own code first", "schedule", "", "", nil, state.HealthMisfired, state.DeliveryNotExpected,
			[]state.ReasonCode{state.ScheduleHealthMisfired}},
		{"no reason: the delivery code", "session", "completed", state.RunCompletedExitZero, nil, state.HealthOK, state.DeliveryPartial,
			[]state.ReasonCode{state.RunDeliveryPartial}},
		{"no reason and nothing registered: no item", "session", "", "", nil, state.HealthRunning, state.DeliveryNotExpected,
			[]state.ReasonCode{}},
		{"registered straight into failed: unexplained", "session", "failed", "", nil, state.HealthOK, state.DeliveryNotExpected,
			[]state.ReasonCode{state.SystemOutcomeUnexplained}},
		{"registered straight into a harmless outcome: no item", "session", "completed", "", nil, state.HealthOK, state.DeliveryNotExpected,
			[]state.ReasonCode{}},
		{"the artifact contract subsumes delivery findings, not the others", "workflow", "failed", state.RunFailedArtifactContract,
			[]state.ReasonCode{state.RunDeliveryInvalid, state.RunHealthStaleLock}, state.HealthDegraded, state.DeliveryInvalid,
			[]state.ReasonCode{state.RunFailedArtifactContract, state.RunHealthStaleLock}},
		{"a phantom reaped as orphaned subsumes the orphan finding", "session", "aborted", state.SystemReaperPhantomOrphaned,
			[]state.ReasonCode{state.RunHealthOrphaned}, state.HealthOrphaned, state.DeliveryNotExpected,
			[]state.ReasonCode{state.SystemReaperPhantomOrphaned}},
		{"an end for a dead process subsumes the death", "session", "aborted", state.SystemHealthProcessDeadNoTerminal,
			[]state.ReasonCode{state.RunHealthPIDReused, state.RunDeliveryMissing}, state.HealthProcessDead, state.DeliveryMissing,
			[]state.ReasonCode{state.SystemHealthProcessDeadNoTerminal, state.RunDeliveryMissing}},
		{"an exit's reason subsumes nothing", "session", "failed", state.RunFailedExitNonzero,
			[]state.ReasonCode{state.RunDeliveryMissing}, state.HealthOK, state.DeliveryMissing,
			[]state.ReasonCode{state.RunFailedExitNonzero, state.RunDeliveryMissing}},
	}
	for _, c := range cases {
		got := Codes(c.typ, c.outcome, c.transition, c.findings, c.h, c.d)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAgedOutAndHides(t *testing.T) {
	const now = 100000.0
	day := 24 * time.Hour
	if AgedOut("", "", unixAt(1), unixAt(1), unixAt(1), unixAt(now), day) {
		t.Error("an open entity aged out")
	}
	if !AgedOut("failed", "", unixAt(now-86401), unixAt(0), unixAt(now), unixAt(now), day) || AgedOut("failed", "", unixAt(now-86400), unixAt(0), unixAt(0), unixAt(now), day) {
		t.Error("the window edge is wrong")
	}
	if !AgedOut("failed", "", unixAt(0), unixAt(now-90000), unixAt(now), unixAt(now), 0) {
		t.Error("lifecycle_at is the fallback, and 0 means the default window")
	}
	d := store.Dismissal{StatusAtDismissal: "running", ClearOnStatusChange: true}
	for _, c := range []struct {
		until      float64
		clear      bool
		occurrence float64 // the dismissed item's first_seen_at; 0 = not recorded
		lifecycle  string
		firstSeen  float64 // the item's first_seen_at now
		hides      bool
	}{
		{0, true, 0, "running", 50, true},
		{now + 1, true, 0, "running", 50, true},
		{now, true, 0, "running", 50, false}, // expired at now
		{0, true, 0, "failed", 50, false},    // status changed
		{0, false, 0, "failed", 50, true},    // ignores status changes
		{now - 1, false, 0, "running", 50, false},
		{0, true, 50, "running", 50, true},         // the occurrence dismissed
		{0, false, 50, "running", 50.0004, true},   // the same one, through a float
		{0, true, 50, "running", 90, false},        // a recurrence
		{now + 1, false, 50, "running", 90, false}, // a recurrence outlives no snooze
		{0, false, 50, "failed", 90, false},        // nor a permanent dismissal
	} {
		d.SnoozedUntil, d.ClearOnStatusChange, d.Occurrence = unixAt(c.until), c.clear, unixAt(c.occurrence)
		it := &Item{Status: c.lifecycle, FirstSeenAt: unixtime.Of(unixAt(c.firstSeen))}
		if got := Hides(d, it, unixAt(now)); got != c.hides {
			t.Errorf("Hides(until %v, clear %v, occurrence %v; now %s, first seen %v) = %v", c.until, c.clear, c.occurrence, c.lifecycle, c.firstSeen, got)
		}
	}
}

func TestBuildSkipsLegacyNeutralAndAgedOut(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	nowS := float64(now.Unix())
	failed, running := "failed", "running"
	reason := &state.StateReason{Code: state.RunFailedExitNonzero}
	entities := []store.Entity{
		{Type: "session", ID: "legacy", Health: state.HealthStalled, Reasons: []state.StateReason{{Code: state.RunHealthStalled}}},
		{Type: "session", ID: "fine", Lifecycle: &running, Health: state.HealthOK, Delivery: state.DeliveryNotExpected},
		{Type: "session", ID: "old", Lifecycle: &failed, Terminal: true, TransitionReason: reason, EndedAt: unixAt(nowS - 90000)},
		{Type: "session", ID: "new", Lifecycle: &failed, Terminal: true, TransitionReason: reason, EndedAt: unixAt(nowS - 60), UpdatedAt: unixAt(nowS - 60)},
	}
	q := Build(entities, nil, Query{}, now)
	if q.Total != 1 || q.Items[0].Entity.ID != "new" || !q.Items[0].FirstSeenAt.Equal(unixAt(nowS-60)) || q.Items[0].Entity.Label != "session/new" {
		t.Errorf("queue: %+v", q)
	}
}

func TestItemAtRendersAndReadiesSnooze(t *testing.T) {
	changed := time.Unix(1_000_000, 0)
	running := "running"
	e := store.Entity{Type: "session", ID: "s-1", Lifecycle: &running, Health: state.HealthStalled,
		Reasons:     []state.StateReason{{Code: state.RunHealthStalled, Message: "no heartbeat since " + state.Stamp(changed), Since: unixtime.Of(changed)}},
		HealthSince: changed, UpdatedAt: changed}
	items := ItemsOf(e, changed, time.Hour)
	if len(items) != 1 {
		t.Fatalf("items: %+v", items)
	}
	for _, c := range []struct {
		read    time.Duration
		summary string
	}{
		{0, "no heartbeat since 1970-01-12 13:46:40Z, 0s ago"},
		{12 * time.Minute, "no heartbeat since 1970-01-12 13:46:40Z, 12m ago"},
	} {
		now := changed.Add(c.read)
		got := items[0].At(now)
		if got.Reason.Summary != c.summary {
			t.Errorf("read %v later: summary %q, want %q", c.read, got.Reason.Summary, c.summary)
		}
		var until any
		for _, a := range got.Actions {
			if a.ID == "snooze" {
				until = a.Body["until"]
			}
		}
		if u, ok := until.(unixtime.Time); !ok || !u.Equal(now.Add(24*time.Hour)) {
			t.Errorf("read %v later: snooze until %v, want %v", c.read, until, now.Add(24*time.Hour))
		}
	}
	// The stored item is left as it was: the next read renders afresh.
	for _, a := range items[0].Actions {
		if _, ok := a.Body["until"]; ok {
			t.Errorf("At changed the stored item's action %s", a.ID)
		}
	}
	if items[0].Reason.Summary != "no heartbeat since 1970-01-12 13:46:40Z" {
		t.Errorf("stored summary changed: %q", items[0].Reason.Summary)
	}
}
