package wire

import (
	"strings"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// TestCursorRoundTrips: a cursor reads back as the very key it was
// written from, in both orders, even of a time finer than the wire's
// microsecond: the key a page compares is the one its cursor carries.
func TestCursorRoundTrips(t *testing.T) {
	running := "running"
	e := store.Entity{Type: "session", ID: "s-1", Lifecycle: &running, Health: state.HealthProcessDead}
	at := time.Unix(1_800_000_000, 123_456_789)
	ns := transitions.Normalize(e, at)
	for _, o := range ListOrders {
		k := ListKeyOf(o, ns, at, e.Type, e.ID)
		got, err := ParseCursor(k.Cursor(), o)
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		if got != k || got.Less(k) || k.Less(got) {
			t.Errorf("%s: read back %+v, wrote %+v", o, got, k)
		}
		// The entity just after it, by a sub-microsecond step, is not
		// after the cursor: the store's column cannot tell them apart,
		// so neither does the key (type and id decide).
		next := ListKeyOf(o, ns, at.Add(100*time.Nanosecond), e.Type, "s-2")
		if !got.Less(next) {
			t.Errorf("%s: %+v is not after the cursor %+v", o, next, got)
		}
	}
}

// TestCursorRefusals: a cursor of another order, or no cursor at all, is
// refused with what to do.
func TestCursorRefusals(t *testing.T) {
	k := ListKey{Order: OrderSeverity, Type: "session", ID: "s-1"}
	for _, tc := range []struct{ cursor, want string }{
		{k.Cursor(), "the cursor belongs to order=severity"},
		{"garbage!", `after "garbage!" is not a cursor this list wrote`},
		{ListKey{Order: OrderID}.Cursor(), "is not a cursor this list wrote"},
	} {
		if _, err := ParseCursor(tc.cursor, OrderID); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCursor(%q): %v, want %q", tc.cursor, err, tc.want)
		}
	}
	if o, err := ParseOrder(""); o != OrderSeverity || err != nil {
		t.Errorf(`ParseOrder(""): %q %v, want the severity order`, o, err)
	}
	if _, err := ParseOrder("age"); err == nil || err.Error() != `order "age" is not one of severity, id` {
		t.Errorf("ParseOrder(age): %v", err)
	}
}
