package probe

import "time"

// LastHeartbeat is the heartbeat a judgement at now takes for an entity, so
// readers need not store the file's mtime each sweep; file "" for another host's.
func LastHeartbeat(owner Owner, file string, postedAt, now time.Time) (at time.Time, fromFile bool) {
	var o HeartbeatObservation
	if !AsOwner(owner, func() { o = CheckHeartbeat(file, postedAt, time.Time{}, now) }) {
		return postedAt, false
	}
	if !o.Real() {
		return time.Time{}, false
	}
	return o.At, o.Source == HeartbeatFile
}
