package reaper

import (
	"time"

	"watchdog/probe"
	"watchdog/transitions"
)

// OneShotSweepBudget bounds the sweep of a one-shot run, which has no next
// sweep to leave the rest to.
const OneShotSweepBudget = time.Minute

// OneShotStore is what a one-shot reaper needs of its store: the
// reaper's reads and, for its writer, the write path's.
type OneShotStore interface {
	Store
	transitions.Store
}

// NewOneShot is a reaper for one command's run on this host; hostID, when
// set, becomes host's so a one-shot run claims what the daemon claims.
func NewOneShot(st OneShotStore, host *probe.Host, s Settings, hostID string) *Reaper {
	if hostID != "" {
		host.HostIDOverride = hostID
	}
	w := &transitions.Writer{Store: st, Now: time.Now, Ident: host, Contracts: Contracts{Host: host}}
	s.SweepBudget = OneShotSweepBudget
	return &Reaper{Store: st, Writer: w, Prober: host, HostID: host.HostID(), Settings: s}
}
