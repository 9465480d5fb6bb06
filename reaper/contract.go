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
// contract at an entity's end; it lives here as probe and write path may not import each other.
type Contracts struct {
	// Host names this host, read at each judgement (host_id may be set late); nil judges every contract as local.
	Host interface{ HostID() string }
}

// LastHeartbeat is what a reader shows of e's heartbeat at now, its file
// examined with its owner's rights.
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
	cl := judge.Classify(probe.Observations{Terminal: true, Artifacts: res}, judge.Thresholds{}, now)
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
