package state

import (
	"testing"
	"time"

	"watchdog/internal/unixtime"
)

// TestJudgedHeartbeatText: a queue item's heartbeat reads as status's
// HEARTBEAT column does, with its source; none reads as nothing.
func TestJudgedHeartbeatText(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		h    *JudgedHeartbeat
		want string
	}{
		{&JudgedHeartbeat{At: unixtime.Of(now.Add(-4 * time.Second)), Source: HeartbeatSourceFile}, "last heartbeat 4s ago (file)"},
		{&JudgedHeartbeat{At: unixtime.Of(now.Add(-71 * time.Minute)), Source: HeartbeatSourcePosted}, "last heartbeat 1h ago (posted)"},
		{&JudgedHeartbeat{At: unixtime.Of(now.Add(time.Second)), Source: HeartbeatSourcePosted}, "last heartbeat now (posted)"},
		{nil, ""},
	} {
		if got := tc.h.Text(now); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.h, got, tc.want)
		}
	}
}
