package attention

import (
	"strings"
	"testing"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// TestFillHeartbeats: each item gets its entity's heartbeat, an entity of
// several items is looked up once, one with none stays without; the text
// line shows it only for a heartbeat finding.
func TestFillHeartbeats(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	item := func(id string, code state.ReasonCode) Item {
		fp := Fingerprint("session", id, code)
		return Item{ID: "attn_" + id, Fingerprint: fp, Severity: state.SeverityWarning, Entity: Entity{Type: "session", ID: id, Label: "session/" + id},
			Status: "running", Reason: Reason{Code: code, Summary: "seen"}, ClusterID: "cluster_" + string(code), ClusterSize: 1,
			FirstSeenAt: unixtime.Of(now.Add(-time.Minute)), LastUpdatedAt: unixtime.Of(now)}
	}
	q := Queue{GeneratedAt: unixtime.Of(now), Total: 3, BySeverity: map[state.Severity]int{state.SeverityWarning: 3}, Items: []Item{
		item("a", state.RunHealthStalled), item("a", state.RunHealthProcessDead), item("b", state.RunHealthIdle),
	}}
	asked := map[string]int{}
	q.FillHeartbeats(func(typ, id string) *state.JudgedHeartbeat {
		asked[typ+"/"+id]++
		if id == "a" {
			return &state.JudgedHeartbeat{At: unixtime.Of(now.Add(-4 * time.Second)), Source: state.HeartbeatSourceFile}
		}
		return nil
	})
	if asked["session/a"] != 1 || asked["session/b"] != 1 {
		t.Errorf("looked up %v, want each entity once", asked)
	}
	if q.Items[0].Heartbeat == nil || q.Items[1].Heartbeat == nil || q.Items[2].Heartbeat != nil {
		t.Fatalf("heartbeats %+v %+v %+v", q.Items[0].Heartbeat, q.Items[1].Heartbeat, q.Items[2].Heartbeat)
	}
	text := q.Text()
	if !strings.Contains(text, "seen · last heartbeat 4s ago (file)") {
		t.Errorf("the stalled item's line lacks its heartbeat:\n%s", text)
	}
	if strings.Count(text, "last heartbeat") != 1 {
		t.Errorf("only the stalled item's line shows a heartbeat (not process_dead's, not b's, which has none):\n%s", text)
	}
}
