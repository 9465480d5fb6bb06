// Package cronspec is the one cron dialect of watchdog: the jobs of the
// config file (jobs.*) and the specs of schedule entities are read by the
// same parser that the scheduler runs them with, so a spec that validates
// is a spec that runs, and a schedule is judged by the rule it was
// registered under.
//
// It is a leaf package (robfig/cron only) so that config, transitions and
// reaper can all import it without importing each other.
package cronspec

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Parser reads five standard fields (minute to day of week), descriptors
// such as @daily and @every 15s, and an optional CRON_TZ= prefix. Give it to
// the scheduler with cron.WithParser(cronspec.Parser).
//
// An @every interval must be whole seconds, one at least: robfig/cron
// runs "@every 1ns", "@every 0s" and "@every -5s" every second and
// "@every 1.5s" every second too, which would be a spec altered, not
// refused (issue 37).
var Parser = parser{cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)}

type parser struct{ p cron.Parser }

// Parse implements cron.ScheduleParser.
func (p parser) Parse(spec string) (cron.Schedule, error) {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(spec), "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		switch {
		case err != nil:
		case d < time.Second:
			return nil, fmt.Errorf("@every %s is under one second: the shortest interval is @every 1s", strings.TrimSpace(rest))
		case d%time.Second != 0:
			return nil, fmt.Errorf("@every %s is not whole seconds (it would run every %s)", strings.TrimSpace(rest), d.Truncate(time.Second))
		}
	}
	return p.p.Parse(spec)
}
