package attention

import (
	"time"

	"watchdog/state"
)

// FillHeartbeats sets each item's Heartbeat to the one its entity is
// judged by, looked up once per entity with of (nil for none). It runs at
// the read over q's own items: cached items are never changed.
func (q *Queue) FillHeartbeats(of func(entityType, entityID string) *state.JudgedHeartbeat) {
	type key struct{ typ, id string }
	found := map[key]*state.JudgedHeartbeat{}
	for i := range q.Items {
		it := &q.Items[i]
		k := key{it.Entity.Type, it.Entity.ID}
		h, ok := found[k]
		if !ok {
			h = of(k.typ, k.id)
			found[k] = h
		}
		it.Heartbeat = h
	}
}

// heartbeatFindings are the reasons whose line shows the heartbeat's age:
// findings about a process that runs (or may).
var heartbeatFindings = map[state.ReasonCode]bool{
	state.RunHealthIdle:            true,
	state.RunHealthStalled:         true,
	state.RunHealthSlow:            true,
	state.RunHealthDisconnected:    true,
	state.RunHealthClockSkew:       true,
	state.RunHealthLivenessUnknown: true,
	state.RunHealthOrphaned:        true,
}

// ShowsHeartbeat reports whether an item of code shows its heartbeat's
// age on its line; the JSON always carries Heartbeat.
func ShowsHeartbeat(code state.ReasonCode) bool { return heartbeatFindings[code] }

// HeartbeatText is the heartbeat part of it's line at now, or "" when its
// reason does not call for it or there is no heartbeat.
func (it *Item) HeartbeatText(now time.Time) string {
	if !ShowsHeartbeat(it.Reason.Code) {
		return ""
	}
	return it.Heartbeat.Text(now)
}
