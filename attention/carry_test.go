package attention

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// escalated is a session the watchdog ended for a finding (transition
// reason end) that it still holds, dated onset.
func escalated(id string, end state.ReasonCode, outcome string, finding state.ReasonCode, h state.Health, d state.Delivery, onset, at time.Time) store.Entity {
	f := state.Observed(finding, "")
	f.FirstSeen = unixtime.Of(onset)
	return store.Entity{Type: "session", ID: id, Lifecycle: &outcome, Terminal: true,
		TransitionReason: &state.StateReason{Code: end}, Health: h, Delivery: d, HealthSince: onset,
		Reasons: []state.StateReason{f}, EndedAt: at, LifecycleAt: at, CreatedAt: onset.Add(-time.Hour), UpdatedAt: at}
}

// TestCarries: an acknowledgement of a finding carries over to the item of
// the end that subsumes it, for the same occurrence only, in the queue
// (Build) and in what the acknowledgement rule answers (Acknowledgement).
func TestCarries(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	onset, end := now.Add(-10*time.Minute), now.Add(-5*time.Minute)
	dead := escalated("s", state.SystemHealthProcessDeadNoTerminal, "aborted", state.RunHealthProcessDead, state.HealthProcessDead, state.DeliveryUnknown, onset, end)
	undated := dead
	undated.Reasons = []state.StateReason{state.Observed(state.RunHealthProcessDead, "")}
	later := escalated("s", state.SystemHealthProcessDeadNoTerminal, "aborted", state.RunHealthProcessDead, state.HealthProcessDead, state.DeliveryUnknown, end.Add(time.Minute), end)
	orphan := escalated("s", state.SystemReaperPhantomOrphaned, "aborted", state.RunHealthOrphaned, state.HealthOrphaned, state.DeliveryUnknown, onset, end)
	contract := escalated("s", state.RunFailedArtifactContract, "failed", state.RunDeliveryMissing, state.HealthOK, state.DeliveryMissing, onset, end)

	// ack is a dismissal of the session's item of code, as Dismiss records
	// it while the session was still running.
	ack := func(code state.ReasonCode, occurrence time.Time, mod func(*store.Dismissal)) store.Dismissal {
		d := store.Dismissal{Fingerprint: Fingerprint("session", "s", code), EntityType: "session", EntityID: "s", ReasonCode: string(code),
			StatusAtDismissal: "running", DismissedAt: onset.Add(time.Minute), ClearOnStatusChange: true, Occurrence: occurrence}
		if mod != nil {
			mod(&d)
		}
		return d
	}
	snooze := func(d *store.Dismissal) { d.SnoozedUntil = now.Add(time.Hour) }
	for _, c := range []struct {
		name   string
		e      store.Entity
		d      store.Dismissal
		hidden bool
		// as is the item's dismissed_as when hidden ("" for its own).
		as string
	}{
		// Carried over: the same occurrence of a subsumed finding.
		{"snoozed process_dead, ended by the reaper", dead, ack(state.RunHealthProcessDead, onset, snooze), true, "session:s:run.health.process_dead"},
		{"dismissed process_dead, ended by the reaper", dead, ack(state.RunHealthProcessDead, onset, nil), true, "session:s:run.health.process_dead"},
		{"without clear_on_status_change", dead, ack(state.RunHealthProcessDead, onset, func(d *store.Dismissal) { d.ClearOnStatusChange = false }), true, "session:s:run.health.process_dead"},
		{"dismissed after the end, on the finding", dead, ack(state.RunHealthProcessDead, onset, func(d *store.Dismissal) {
			d.StatusAtDismissal, d.DismissedAt = "aborted", end.Add(time.Minute)
		}), true, "session:s:run.health.process_dead"},
		{"orphan reaped as a phantom", orphan, ack(state.RunHealthOrphaned, onset, snooze), true, "session:s:run.health.orphaned"},
		{"delivery finding, failed contract", contract, ack(state.RunDeliveryMissing, onset, snooze), true, "session:s:run.delivery.missing"},
		{"within a float's last bit", dead, ack(state.RunHealthProcessDead, onset.Add(200*time.Microsecond), nil), true, "session:s:run.health.process_dead"},
		// The end's own item dismissed: the usual rule.
		{"the end's own item", dead, ack(state.SystemHealthProcessDeadNoTerminal, end, func(d *store.Dismissal) { d.StatusAtDismissal = "aborted" }), true, ""},
		// Not carried.
		{"snooze expired", dead, ack(state.RunHealthProcessDead, onset, func(d *store.Dismissal) { d.SnoozedUntil = now }), false, ""},
		{"an earlier occurrence", dead, ack(state.RunHealthProcessDead, onset.Add(-time.Hour), nil), false, ""},
		{"a finding that began after the end", later, ack(state.RunHealthProcessDead, end.Add(time.Minute), nil), false, ""},
		{"a row from before occurrences", dead, ack(state.RunHealthProcessDead, time.Time{}, nil), false, ""},
		{"an undated finding", undated, ack(state.RunHealthProcessDead, onset, nil), false, ""},
		{"a finding the end does not subsume", dead, ack(state.RunHealthStalled, onset, nil), false, ""},
		{"another entity's finding", dead, func() store.Dismissal {
			d := ack(state.RunHealthProcessDead, onset, nil)
			d.Fingerprint, d.EntityID = Fingerprint("session", "other", state.RunHealthProcessDead), "other"
			return d
		}(), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds := map[string]store.Dismissal{c.d.Fingerprint: c.d}
			items := ItemsOf(c.e, now, 0)
			if len(items) != 1 || items[0].Reason.Code != c.e.TransitionReason.Code {
				t.Fatalf("items %+v, want the end's one", items)
			}
			if _, ok := Acknowledgement(ds, &items[0], now); ok != c.hidden {
				t.Errorf("Acknowledgement hides: %v, want %v", ok, c.hidden)
			}
			if q := Build([]store.Entity{c.e}, ds, Query{}, now); (q.Total == 0) != c.hidden {
				t.Errorf("queue total %d, hidden want %v", q.Total, c.hidden)
			}
			q := Build([]store.Entity{c.e}, ds, Query{IncludeDismissed: true}, now)
			if len(q.Items) != 1 {
				t.Fatalf("include_dismissed: %d items", len(q.Items))
			}
			if it := q.Items[0]; it.Dismissed != c.hidden || it.DismissedAs != c.as {
				t.Errorf("include_dismissed: dismissed %v as %q, want %v as %q", it.Dismissed, it.DismissedAs, c.hidden, c.as)
			}
		})
	}
}

// TestDismissSubsumedFinding: a snooze sent for a finding the end has
// escalated since the queue was read is recorded on the finding's
// occurrence and hides the end's item; a fingerprint the entity holds no
// finding of is still no item.
func TestDismissSubsumedFinding(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &transitions.Writer{Store: st}
	running := "running"
	if _, err := w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: "s", Lifecycle: &running}, Actor: transitions.ActorOrchestrator}); err != nil {
		t.Fatal(err)
	}
	e, err := st.Get(ctx, "session", "s")
	if err != nil {
		t.Fatal(err)
	}
	onset := time.Now().Add(-time.Minute).Round(time.Millisecond)
	f := state.Observed(state.RunHealthProcessDead, "process dead")
	f.FirstSeen = unixtime.Of(onset)
	if _, err := st.RecordObservation(ctx, "session", "s", store.Observation{Health: state.HealthProcessDead, Delivery: state.DeliveryUnknown,
		HealthSince: onset, DeadSince: onset, Reasons: []state.StateReason{f}, SeenSeq: e.LastSeq, At: onset}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "s", To: "aborted", Actor: transitions.ActorReaper,
		Reason: &state.StateReason{Code: state.SystemHealthProcessDeadNoTerminal}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, c := range []struct {
		fp   string
		want error
	}{
		{"session:s:run.health.pid_reused", ErrNoItem},
		{"session:s:run.health.process_dead", nil},
	} {
		d, err := Dismiss(ctx, st, Dismissing{Fingerprint: c.fp, Until: now.Add(time.Hour), ClearOnStatusChange: true}, now, 0)
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.fp, err, c.want)
		}
		if err == nil && (!SameOccurrence(d.Occurrence, onset) || d.StatusAtDismissal != "aborted") {
			t.Errorf("%s: row %+v, want the finding's onset %v", c.fp, d, onset)
		}
	}
	if q, err := Read(ctx, st, Query{}, now); err != nil || q.Total != 0 {
		t.Errorf("queue after the snooze: %+v %v", q, err)
	}
}
