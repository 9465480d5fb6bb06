package probe

import "time"

// LastHeartbeat is the heartbeat a judgement at now takes for an entity
// with this heartbeat file and this posted heartbeat (zero = none): the
// later of the two by CheckHeartbeat's own rule (clamping included),
// without its fall-back to the start. at is zero when there is neither;
// fromFile says the file's mtime won.
//
// It is the readers' way to show the heartbeat the judgement used without
// the daemon storing the file's mtime at every sweep (an agent touching
// its file every 5 s must not cost a database write each time): a read
// stats the file once. Only this host's files mean anything; a caller
// passes file "" for an entity of another host, whose posted heartbeat is
// then the one judged here too.
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
