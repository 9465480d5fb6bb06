package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestProcessTreeMetrics: walk and no misses before the daemon sets a
// source, then the tree's mode and counts at each scrape.
func TestProcessTreeMetrics(t *testing.T) {
	m, reg := newMetrics(t, newFixture(t).st)
	const head = `
# HELP watchdog_process_tree_mode How the daemon keeps each watched process's descendants: 1 for the mode in force, events (the kernel's process connector), walk (/proc walks at the sweep and at each death) or off (none kept).
# TYPE watchdog_process_tree_mode gauge
# HELP watchdog_process_tree_overflow_total Process exits the process tree missed: dropped at its full queue (queue) or by the kernel under a fork storm (kernel, each followed by a /proc walk); deaths are still seen by pidfd.
# TYPE watchdog_process_tree_overflow_total counter
`
	want := func(events, walk, queue, kernel string) string {
		off := "0"
		if events == "0" && walk == "0" {
			off = "1"
		}
		return head + `watchdog_process_tree_mode{mode="events"} ` + events + "\n" + `watchdog_process_tree_mode{mode="off"} ` + off + "\n" + `watchdog_process_tree_mode{mode="walk"} ` + walk + "\n" +
			`watchdog_process_tree_overflow_total{cause="kernel"} ` + kernel + "\n" + `watchdog_process_tree_overflow_total{cause="queue"} ` + queue + "\n"
	}
	names := []string{"watchdog_process_tree_mode", "watchdog_process_tree_overflow_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("0", "1", "0", "0")), names...); err != nil {
		t.Error(err)
	}
	m.ProcessTree(TreeSource{Mode: func() string { return "events" }, Overflows: func() uint64 { return 4 }, Lost: func() uint64 { return 2 }})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("1", "0", "4", "2")), names...); err != nil {
		t.Error(err)
	}
	m.ProcessTree(TreeSource{Mode: func() string { return "off" }, Overflows: func() uint64 { return 0 }, Lost: func() uint64 { return 0 }})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("0", "0", "0", "0")), names...); err != nil {
		t.Error(err)
	}
}
