package reaper

import (
	"context"
	"fmt"
	"sort"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// HostsReport is what one JudgeHosts run found and wrote.
type HostsReport struct {
	// Disconnected and Lost name the silent hosts, sorted.
	Disconnected []string
	Lost         []string
	// Written counts the entities whose finding changed.
	Written int
}

// JudgeHosts is the leader's judgement of silent hosts (ADR-0026): their open
// entities read disconnected, then lost, as observations, never a lifecycle
// change, since only their own host may end them.
func (r *Reaper) JudgeHosts(ctx context.Context, seen map[string]time.Time) (HostsReport, error) {
	var rep HostsReport
	now := r.now()
	disc, lost := r.Settings.HostDisconnectedAfter, r.Settings.HostLostAfter
	if disc <= 0 {
		disc = DefaultSettings.HostDisconnectedAfter
	}
	if lost <= disc {
		lost = max(DefaultSettings.HostLostAfter, disc+time.Second)
	}
	hosts := make([]string, 0, len(seen))
	for h := range seen {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		at := seen[host]
		silent := now.Sub(at)
		if host == r.HostID || host == "" || silent < disc {
			continue
		}
		health, code := state.HealthDisconnected, state.SystemHostDisconnected
		msg := fmt.Sprintf("host %s: its daemon has been silent since %s (host_disconnected_after %s); its work may still run", host, state.Stamp(at), disc)
		if silent >= lost {
			health, code = state.HealthLost, state.SystemHostLost
			msg = fmt.Sprintf("host %s: its daemon has been silent since %s (host_lost_after %s); nobody watches its work", host, state.Stamp(at), lost)
			rep.Lost = append(rep.Lost, host)
		} else {
			rep.Disconnected = append(rep.Disconnected, host)
		}
		list, err := r.Store.List(ctx, store.Filter{HostID: host, OpenOnly: true})
		if err != nil {
			return rep, fmt.Errorf("judge host %s: %w", host, err)
		}
		for _, e := range list {
			if !r.leads() {
				return rep, nil // the new leader judges the rest
			}
			wrote, err := r.judgeSilent(ctx, e, health, code, msg, at, now)
			if err != nil {
				return rep, fmt.Errorf("judge host %s: %w", host, err)
			}
			if wrote {
				rep.Written++
			}
		}
	}
	return rep, nil
}

// judgeSilent records one entity of a silent host as health with the one
// finding code, when that is not what is stored already.
func (r *Reaper) judgeSilent(ctx context.Context, e store.Entity, health state.Health, code state.ReasonCode, msg string, at, now time.Time) (bool, error) {
	ev := state.EvidenceRef{Kind: state.EvidenceToolResult, ID: "host/" + e.HostID, Detail: "last presence " + state.Stamp(at),
		Times: []state.EvidenceTime{state.TimeOf(state.Stamp(at), at)}}
	reason := state.Observed(code, msg, ev)
	reason.EntityType, reason.EntityID = e.Type, e.ID
	reasons := []state.StateReason{reason}
	state.CarryOnsets(reasons, e.Reasons, now)
	if e.Health == health && state.SameFindings(reasons, e.Reasons) {
		return false, nil
	}
	obs := store.Observation{Health: health, Delivery: e.Delivery, Reasons: reasons, HealthSince: now, DeadSince: e.DeadSince, SeenSeq: e.LastSeq, At: now}
	if e.Health == health {
		obs.HealthSince = e.HealthSince
	}
	// The host's daemon may have come back: read presence again right before
	// each write, or a stale "lost" would page for a host that is fine.
	if p, ok := r.Store.(interface {
		DaemonsSeen(ctx context.Context) (map[string]time.Time, error)
	}); ok {
		seen, err := p.DaemonsSeen(ctx)
		if err != nil {
			return false, err
		}
		if seen[e.HostID].After(at) {
			return false, nil
		}
	}
	return r.Store.RecordObservation(ctx, e.Type, e.ID, obs)
}
