package live

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"watchdog/state"
	"watchdog/store"
)

// TestInternKeepsValues: interning changes where an entity's words live,
// never what they are, and two entities' equal words share one copy.
func TestInternKeepsValues(t *testing.T) {
	fresh := func(s string) string { return strings.Clone(s) } // as a row decodes it
	mk := func() store.Entity {
		lc := fresh("running")
		return store.Entity{
			Type: fresh("session"), ID: fresh("s-1"), Lifecycle: &lc, Health: state.Health(fresh("stalled")),
			Delivery: state.Delivery(fresh("expected")), HostID: fresh("host-a"), BootID: fresh("boot-1"),
			TransitionReason: &state.StateReason{Code: state.ReasonCode(fresh("run.failed.exit_nonzero"))},
			Reasons: []state.StateReason{{Code: state.ReasonCode(fresh("run.health.stalled")), ClaimStatus: fresh("observed"),
				Message: fresh("no heartbeat since …"), EntityID: fresh("s-1"),
				Evidence: []state.EvidenceRef{{Kind: fresh("tool_result"), Detail: fresh("no heartbeat")}}}},
		}
	}
	in := newInterner()
	a, b := mk(), mk()
	want := mk()
	in.entity(&a)
	in.entity(&b)
	if !reflect.DeepEqual(a, want) || !reflect.DeepEqual(b, want) {
		t.Fatalf("interning changed the entity:\n got %+v\nwant %+v", a, want)
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	for _, c := range []struct {
		what string
		x, y string
	}{
		{"type", a.Type, b.Type},
		{"health", string(a.Health), string(b.Health)},
		{"delivery", string(a.Delivery), string(b.Delivery)},
		{"host", a.HostID, b.HostID},
		{"boot", a.BootID, b.BootID},
		{"transition code", string(a.TransitionReason.Code), string(b.TransitionReason.Code)},
		{"finding code", string(a.Reasons[0].Code), string(b.Reasons[0].Code)},
		{"evidence kind", a.Reasons[0].Evidence[0].Kind, b.Reasons[0].Evidence[0].Kind},
		{"finding message", a.Reasons[0].Message, b.Reasons[0].Message},
		{"evidence detail", a.Reasons[0].Evidence[0].Detail, b.Reasons[0].Evidence[0].Detail},
		{"a finding's entity id and its entity's", a.Reasons[0].EntityID, a.ID},
	} {
		if !same(c.x, c.y) {
			t.Errorf("%s: two copies", c.what)
		}
	}
	if a.Lifecycle != b.Lifecycle {
		t.Error("lifecycle: two pointers")
	}
	if same(a.ID, b.ID) {
		t.Error("id interned: ids are each entity's own")
	}
}

// TestInternBounded: past maxInterned words a kind (words, texts), words
// are kept as decoded and the table stops growing.
func TestInternBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		add   func(*interner, string) string
		table func(*interner) int
	}{
		{"words", (*interner).word, func(in *interner) int { return len(in.words) }},
		{"texts", (*interner).text, func(in *interner) int { return len(in.texts) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInterner()
			for i := 0; i < maxInterned+10; i++ {
				tc.add(&in, strings.Repeat("x", i+1))
			}
			if n := tc.table(&in); n != maxInterned {
				t.Errorf("table holds %d words, bound %d", n, maxInterned)
			}
			w := strings.Repeat("y", 3)
			if got := tc.add(&in, w); got != w {
				t.Errorf("word past the bound = %q", got)
			}
		})
	}
}
