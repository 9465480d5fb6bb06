package attention

import (
	"time"

	"watchdog/state"
)

// FillHeartbeats sets each item's Heartbeat to the heartbeat its entity is
// judged by, when it has one: of finds it for the entity the item names
// (wire.Heartbeats over the live view's or the store's entity, so one
// stat per entity with a heartbeat file on this host) and returns nil for
// none. It runs when the queue is read, over q's own items: the live
// view's cached items are never changed, and nothing is stored. An
// entity with several items is looked up once.
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

// heartbeatFindings are the reasons whose item line shows the heartbeat's
// age: the findings about a process that runs (or may), which the
// heartbeat's age explains or qualifies.
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
// age on its line (`watchdog attention`, the page): the findings of a
// running process (idle, stalled, slow, disconnected, clock skew,
// liveness unknown, orphaned). Every item carries its Heartbeat in the
// JSON all the same.
func ShowsHeartbeat(code state.ReasonCode) bool { return heartbeatFindings[code] }

// HeartbeatText is the heartbeat part of it's line at now, "last heartbeat
// 4s ago (file)", or "" when its reason does not call for it or its
// entity has no heartbeat.
func (it *Item) HeartbeatText(now time.Time) string {
	if !ShowsHeartbeat(it.Reason.Code) {
		return ""
	}
	return it.Heartbeat.Text(now)
}
