package reaper

import (
	"time"

	"watchdog/config"
	"watchdog/probe"
	"watchdog/transitions"
)

// OneShotSweepBudget bounds the sweep of a one-shot run (`watchdog reap`,
// `probe --entity`, exec's closing probe). The daemon's budget keeps one
// sweep from starving the next; a one-shot run has no next sweep to leave
// the rest to, so it may take longer.
const OneShotSweepBudget = time.Minute

// NewOneShot is a reaper for one command's run on this host: the daemon's
// settings from cfg, with the one-shot sweep budget.
func NewOneShot(st Store, w *transitions.Writer, host *probe.Host, cfg *config.Config) *Reaper {
	s := SettingsFrom(cfg)
	s.SweepBudget = OneShotSweepBudget
	return &Reaper{Store: st, Writer: w, Prober: host, HostID: host.HostID(), Settings: s}
}
