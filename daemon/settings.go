package daemon

import (
	"time"

	"watchdog/config"
	"watchdog/internal/cronspec"
	"watchdog/judge"
	"watchdog/reaper"
	"watchdog/transitions"
)

// ReaperSettings maps a config's thresholds and reaper section onto the
// reaper's settings, for the daemon and the one-shot commands alike, so
// the reaper need not know the config file. The sweep budget is the
// sweep's own interval, at least 5s.
func ReaperSettings(cfg *config.Config) reaper.Settings {
	t := cfg.Thresholds
	// A user deleted since resolves to nobody, which only narrows kill_orphans.
	killUIDs, _ := cfg.Reaper.KillUIDs()
	return reaper.Settings{
		Settings: judge.Settings{
			Thresholds: judge.Thresholds{
				IdleAfter: time.Duration(t.IdleAfter), StalledAfter: time.Duration(t.StalledAfter),
				SlowAfter: time.Duration(t.SlowAfter), SlowUntil: time.Duration(t.SlowUntil),
				RequireHeartbeat: canonicalTypes(t.RequireHeartbeat),
			},
			TerminalGrace: time.Duration(t.TerminalGrace),
			PhantomAfter:  time.Duration(t.PhantomAfter),
			MisfireGrace:  time.Duration(t.MisfireGrace),
			FailureWindow: time.Duration(t.FailureWindow),
		},

		HostDisconnectedAfter: time.Duration(t.HostDisconnectedAfter),
		HostLostAfter:         time.Duration(t.HostLostAfter),

		SweepBudget: max(specInterval(cfg.Jobs.Sweep), 5*time.Second),
		DryRun:      cfg.Reaper.DryRun,
		MaxPerRun:   cfg.Reaper.MaxPerRun,
		KillOrphans: cfg.Reaper.KillOrphans,
		KillGrace:   time.Duration(cfg.Reaper.KillGrace),
		KillUIDs:    killUIDs,

		KillLeftovers: cfg.Reaper.KillLeftovers,
		LeftoverGrace: time.Duration(cfg.Reaper.LeftoverGrace),
	}
}

// specInterval is the gap between two fires of a cron spec, 0 if it does
// not parse.
func specInterval(spec string) time.Duration {
	s, err := cronspec.Parser.Parse(spec)
	if err != nil {
		return 0
	}
	a := s.Next(time.Now())
	return s.Next(a).Sub(a)
}

// canonicalTypes are the config's type names as the store spells them.
func canonicalTypes(types []string) []string {
	var out []string
	for _, t := range types {
		if c, ok := transitions.CanonicalType(t); ok {
			out = append(out, c)
		}
	}
	return out
}
