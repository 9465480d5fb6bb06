package wire

import (
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// TestHeartbeatsOf: a heartbeat file is read only for this host's
// entities, and whichever the rule picks is shown with its source; another
// host's entity, or a reader that cannot see files, shows the posted one.
func TestHeartbeatsOf(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	posted := now.Add(-4 * time.Minute)
	touched := now.Add(-5 * time.Second)
	var asked []string
	hb := &Heartbeats{HostID: "here", Last: func(e *store.Entity, _ time.Time) (time.Time, bool) {
		file, p := e.HeartbeatFile, e.HeartbeatAt
		asked = append(asked, file)
		if file == "/hb/fresh" && touched.After(p) {
			return touched, true
		}
		return p, false
	}}
	for _, tc := range []struct {
		name   string
		e      store.Entity
		h      *Heartbeats
		source string
		at     time.Time
		stat   bool
	}{
		{"this host's file newer", store.Entity{HostID: "here", HeartbeatFile: "/hb/fresh", HeartbeatAt: posted}, hb, state.HeartbeatSourceFile, touched, true},
		{"this host's posted newer", store.Entity{HostID: "here", HeartbeatFile: "/hb/stale", HeartbeatAt: posted}, hb, state.HeartbeatSourcePosted, posted, true},
		{"another host's file is not read", store.Entity{HostID: "there", HeartbeatFile: "/hb/fresh", HeartbeatAt: posted}, hb, state.HeartbeatSourcePosted, posted, false},
		{"no reader of files", store.Entity{HostID: "here", HeartbeatFile: "/hb/fresh", HeartbeatAt: posted}, nil, state.HeartbeatSourcePosted, posted, false},
		{"posted only", store.Entity{HostID: "here", HeartbeatAt: posted}, hb, state.HeartbeatSourcePosted, posted, false},
		{"none", store.Entity{HostID: "here"}, hb, "", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			got := tc.h.Of(&tc.e, now)
			if tc.stat != (len(asked) == 1) {
				t.Errorf("read the file %d times, want stat %v", len(asked), tc.stat)
			}
			if tc.source == "" {
				if got != nil {
					t.Fatalf("got %+v, want none", got)
				}
				return
			}
			if got == nil || got.Source != tc.source || !got.At.Equal(tc.at) {
				t.Fatalf("got %+v, want %s at %v", got, tc.source, tc.at)
			}
			ent := FromEntity(tc.e, nil, tc.h, now)
			if !ent.LastHeartbeat().Equal(tc.at) || !ent.HeartbeatAt.Equal(posted) {
				t.Fatalf("entity shows %v (heartbeat_at %v), want %v and the posted one kept", ent.LastHeartbeat(), ent.HeartbeatAt, tc.at)
			}
		})
	}
}
