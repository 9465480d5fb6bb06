// Package cronspec is the one cron dialect of watchdog: the jobs of the
// config file (jobs.*) and the specs of schedule entities are read by the
// same parser that the scheduler runs them with, so a spec that validates
// is a spec that runs, and a schedule is judged by the rule it was
// registered under.
//
// It is a leaf package (robfig/cron only) so that config, transitions and
// reaper can all import it without importing each other.
package cronspec

import "github.com/robfig/cron/v3"

// Parser reads five standard fields (minute to day of week), descriptors
// such as @daily and @every 15s, and an optional CRON_TZ= prefix. Give it to
// the scheduler with cron.WithParser(cronspec.Parser).
var Parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
