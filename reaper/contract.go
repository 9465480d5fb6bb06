package reaper

import (
	"context"
	"strings"
	"time"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// Contracts is the probe's artifact check as the write path's judge of a
// contract at an entity's end (transitions.Contracts): the same check and
// the same delivery findings a sweep records, taken at the moment of the
// end. It lives here because the reaper already joins the probe and the
// write path, which may not import each other.
type Contracts struct {
	// Host names this host (probe.Host; read at each judgement, as a
	// config's host_id may set it late): another host's files are not
	// here to judge. Nil judges every contract as local.
	Host interface{ HostID() string }
}

// LastHeartbeat is what a reader shows of e's heartbeat at now: its file
// (examined with its owner's rights) or its posted one, as the
// judgement takes it (probe.LastHeartbeat); wire.Heartbeats' Last.
func LastHeartbeat(e *store.Entity, now time.Time) (time.Time, bool) {
	return probe.LastHeartbeat(judge.OwnerOf(e), e.HeartbeatFile, e.HeartbeatAt, now)
}

// Judge checks e's contract under its root now.
func (c Contracts) Judge(ctx context.Context, e store.Entity, now time.Time) (transitions.Verdict, bool) {
	if len(e.Artifacts) == 0 || (c.Host != nil && e.HostID != "" && e.HostID != c.Host.HostID()) {
		return transitions.Verdict{}, false
	}
	started := e.StartedAt
	if started.IsZero() {
		started = e.PIDStartTime
	}
	var res probe.ArtifactResult
	if !probe.AsOwner(judge.OwnerOf(&e), func() { res = probe.CheckArtifacts(ctx, e.ArtifactsRoot, e.Artifacts, started) }) || res.Interrupted {
		return transitions.Verdict{}, false
	}
	// Classify as an ended entity with nothing but its artifacts: its
	// delivery findings are the sweep's own, word for word.
	cl := probe.Classify(probe.Observations{Terminal: true, Artifacts: res}, probe.Thresholds{}, now)
	v := transitions.Verdict{Delivery: cl.Delivery}
	for _, r := range cl.Reasons {
		if strings.Contains(string(r.Code), ".delivery.") {
			r.EntityType, r.EntityID = e.Type, e.ID
			v.Reasons = append(v.Reasons, r)
		}
	}
	for _, f := range res.Failing() {
		v.Failing = append(v.Failing, f.Detail())
	}
	if res.Stopped != "" {
		v.Failing = append(v.Failing, "artifact check stopped: "+res.Stopped)
	}
	if v.Delivery == "" {
		v.Delivery = state.DeliveryUnknown
	}
	return v, true
}
