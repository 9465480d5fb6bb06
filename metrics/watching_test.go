package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPidwatchOverflowMetric: the counter is there at 0 before the daemon
// sets a source (and with no pidfd watcher at all), then reads the
// watcher's count at each scrape.
func TestPidwatchOverflowMetric(t *testing.T) {
	m, reg := newMetrics(t, newFixture(t).st)
	const head = `
# HELP watchdog_pidwatch_overflow_total Process deaths the pidfd watcher dropped at its full queue; each drop makes the monitor re-check every watched process, so none is missed, but their exit status is lost.
# TYPE watchdog_pidwatch_overflow_total counter
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(head+"watchdog_pidwatch_overflow_total 0\n"), "watchdog_pidwatch_overflow_total"); err != nil {
		t.Error(err)
	}
	var n uint64 = 5
	m.PidwatchOverflows(func() uint64 { return n })
	if err := testutil.GatherAndCompare(reg, strings.NewReader(head+"watchdog_pidwatch_overflow_total 5\n"), "watchdog_pidwatch_overflow_total"); err != nil {
		t.Error(err)
	}
	n = 12
	if err := testutil.GatherAndCompare(reg, strings.NewReader(head+"watchdog_pidwatch_overflow_total 12\n"), "watchdog_pidwatch_overflow_total"); err != nil {
		t.Error(err)
	}
}
