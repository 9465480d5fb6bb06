// Package cronspec is watchdog's one cron dialect: config jobs and schedule
// entities are validated by the parser the scheduler runs them with (ADR-0006).
package cronspec

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Parser reads five standard fields, descriptors (@daily, @every 15s) and an
// optional CRON_TZ= prefix. It refuses an @every under 1s or not whole seconds,
// which robfig/cron would silently run every second instead (issue 37).
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
