package sqlite

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	"watchdog/state"
	"watchdog/store"
)

// registerAt inserts an entity with a lifecycle (nil: legacy) through the
// store's own Register.
func registerAt(t *testing.T, s *Store, typ, id string, lifecycle *string) {
	t.Helper()
	if _, err := s.Register(context.Background(), store.Entity{Type: typ, ID: id, Lifecycle: lifecycle}, "orchestrator", unixAt(100)); err != nil {
		t.Fatal(err)
	}
}

// moveTo changes an entity's lifecycle through the store half of the
// write path (the only way a lifecycle changes).
func moveTo(t *testing.T, s *Store, typ, id, to string, terminal bool, reason *state.StateReason) {
	t.Helper()
	_, _, err := s.ApplyTransition(context.Background(), typ, id, func(store.Entity) (store.Change, error) {
		return store.Change{To: to, Terminal: terminal, Reason: reason, Actor: "orchestrator", At: unixAt(200)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUpsertDismissalKeepsIdentity(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	registerAt(t, s, "session", "s-1", strp("running"))
	d := store.Dismissal{
		Fingerprint: "session:s-1:run.health.stalled", EntityType: "session", EntityID: "s-1",
		ReasonCode: "run.health.stalled", StatusAtDismissal: "running", SnoozedUntil: unixAt(500),
		DismissedAt: unixAt(300), ClearOnStatusChange: true,
	}
	if err := s.UpsertDismissal(ctx, d); err != nil {
		t.Fatal(err)
	}
	first, err := s.Dismissals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := first[d.Fingerprint]
	if !strings.HasPrefix(got.ID, "dsm_") || !got.CreatedAt.Equal(unixAt(300)) || got.DismissedBy != "operator" || !got.SnoozedUntil.Equal(unixAt(500)) || !got.ClearOnStatusChange {
		t.Fatalf("first upsert: %+v", got)
	}

	if !got.Occurrence.IsZero() {
		t.Fatalf("no occurrence given, %v read back", got.Occurrence)
	}

	// Re-dismissing the same fingerprint updates the row in place: a
	// permanent dismissal now, no status clearing, a later occurrence,
	// same id and created_at.
	d.SnoozedUntil, d.DismissedAt, d.ClearOnStatusChange, d.DismissedBy = unixAt(0), unixAt(400), false, "alice"
	d.Occurrence = unixAt(350.25)
	if err := s.UpsertDismissal(ctx, d); err != nil {
		t.Fatal(err)
	}
	second, err := s.Dismissals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 1 {
		t.Fatalf("%d rows after re-dismissing one fingerprint", len(second))
	}
	want := got
	want.SnoozedUntil, want.DismissedAt, want.ClearOnStatusChange, want.DismissedBy = unixAt(0), unixAt(400), false, "alice"
	want.Occurrence = unixAt(350.25)
	if !reflect.DeepEqual(second[d.Fingerprint], want) {
		t.Errorf("after re-dismiss:\n got %+v\nwant %+v", second[d.Fingerprint], want)
	}

	// Another reason code is another fingerprint and another row.
	d2 := d
	d2.Fingerprint, d2.ReasonCode = "session:s-1:run.health.idle", "run.health.idle"
	if err := s.UpsertDismissal(ctx, d2); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.Dismissals(ctx); len(all) != 2 || all[d2.Fingerprint].ID == all[d.Fingerprint].ID {
		t.Errorf("a new reason code did not get its own row: %+v", all)
	}
}

func TestUpsertDismissalRefusesIncompleteRows(t *testing.T) {
	s, _ := openTest(t)
	err := s.UpsertDismissal(context.Background(), store.Dismissal{Fingerprint: "session:s-1:run.health.idle"})
	if err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("incomplete dismissal: %v", err)
	}
	if all, _ := s.Dismissals(context.Background()); len(all) != 0 {
		t.Errorf("a refused dismissal was stored: %+v", all)
	}
}

func TestVacuumDismissals(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	registerAt(t, s, "session", "same", strp("running"))
	registerAt(t, s, "session", "changed", strp("running"))
	registerAt(t, s, "session", "sticky", strp("running"))
	moveTo(t, s, "session", "changed", "failed", true, &state.StateReason{Code: state.RunFailedExitNonzero})
	moveTo(t, s, "session", "sticky", "failed", true, &state.StateReason{Code: state.RunFailedExitNonzero})

	add := func(id, code, status string, until float64, clear bool) string {
		t.Helper()
		fp := "session:" + id + ":" + code
		if err := s.UpsertDismissal(ctx, store.Dismissal{Fingerprint: fp, EntityType: "session", EntityID: id,
			ReasonCode: code, StatusAtDismissal: status, SnoozedUntil: unixAt(until), DismissedAt: unixAt(150), ClearOnStatusChange: clear}); err != nil {
			t.Fatal(err)
		}
		return fp
	}
	const now = 1000.0
	keep := []string{
		add("same", "run.health.idle", "running", 0, true),           // status unchanged, permanent
		add("same", "run.health.stalled", "running", now+1, true),    // snooze still running
		add("sticky", "run.health.idle", "running", 0, false),        // ignores status changes
		add("sticky", "run.health.stalled", "running", now+5, false), // ditto, snoozed
	}
	drop := []string{
		add("same", "run.health.slow", "running", now, true),         // snooze expired (at now)
		add("same", "run.delivery.missing", "running", now-1, false), // expired, flag or not
		add("changed", "run.health.idle", "running", 0, true),        // running -> failed
		add("gone", "run.health.idle", "running", 0, false),          // entity does not exist
	}
	n, err := s.VacuumDismissals(ctx, unixAt(now))
	if err != nil {
		t.Fatal(err)
	}
	if n != len(drop) {
		t.Errorf("vacuum dropped %d rows, want %d", n, len(drop))
	}
	left, err := s.Dismissals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for fp := range left {
		got = append(got, fp)
	}
	sort.Strings(got)
	sort.Strings(keep)
	if !reflect.DeepEqual(got, keep) {
		t.Errorf("left after vacuum:\n got %v\nwant %v", got, keep)
	}
	// Idempotent.
	if n, err := s.VacuumDismissals(ctx, unixAt(now)); err != nil || n != 0 {
		t.Errorf("second vacuum: %d, %v", n, err)
	}
}

func TestAttentionQueriesOnClosedStore(t *testing.T) {
	s, _ := openTest(t)
	s.Close()
	ctx := context.Background()
	if _, err := s.Dismissals(ctx); err == nil || !strings.Contains(err.Error(), "read dismissals") {
		t.Errorf("Dismissals on a closed store: %v", err)
	}
	if _, err := s.VacuumDismissals(ctx, unixAt(1)); err == nil || !strings.Contains(err.Error(), "vacuum dismissals") {
		t.Errorf("VacuumDismissals on a closed store: %v", err)
	}
}

func TestAttentionCandidates(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	registerAt(t, s, "session", "open", strp("running"))
	registerAt(t, s, "session", "ended", strp("running"))
	registerAt(t, s, "session", "old", nil)
	moveTo(t, s, "session", "ended", "failed", true, &state.StateReason{Code: state.RunFailedExitNonzero, Message: "exit 3",
		Evidence: []state.EvidenceRef{{Kind: "tool_result", Detail: "exit code 3"}}})
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "open", Label: "the open one", PID: 42}, "orchestrator", unixAt(150)); err != nil {
		t.Fatal(err)
	}
	ids := func(since float64) map[string]store.Entity {
		t.Helper()
		list, err := s.AttentionCandidates(ctx, unixAt(since))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]store.Entity{}
		for _, e := range list {
			out[e.ID] = e
		}
		return out
	}
	got := ids(200)
	if len(got) != 2 {
		t.Fatalf("since 200: %v, want open and ended (legacy never)", got)
	}
	ended := got["ended"]
	if ended.TransitionReason == nil || ended.TransitionReason.Message != "exit 3" || len(ended.TransitionReason.Evidence) != 1 ||
		!ended.EndedAt.Equal(unixAt(200)) || !ended.LifecycleAt.Equal(unixAt(200)) || !ended.CreatedAt.Equal(unixAt(100)) || !ended.Terminal || *ended.Lifecycle != "failed" {
		t.Errorf("ended: %+v", ended)
	}
	open := got["open"]
	if open.Label != "the open one" || open.PID != 0 || !open.UpdatedAt.Equal(unixAt(150)) || open.Reasons == nil {
		t.Errorf("open (only the queue's fields are read): %+v", open)
	}
	if got := ids(201); len(got) != 1 || got["open"].ID != "open" {
		t.Errorf("since 201: %v, want only the open one", got)
	}
}
