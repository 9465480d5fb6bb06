package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// TreeSource is what the process tree's metrics read at scrape time (the
// daemon's proctree.Tree, ADR-0043): its mode, and its two counts of
// missed exits.
type TreeSource struct {
	// Mode is "events", "walk" or "off".
	Mode func() string
	// Overflows counts exits dropped at the tree's full queue; Lost the
	// times the kernel dropped events before the tree read them.
	Overflows, Lost func() uint64
}

// treeModes are the label values of watchdog_process_tree_mode, pre-seeded.
var treeModes = []string{"events", "walk", "off"}

// treeModeDesc is watchdog_process_tree_mode: how the daemon learns of its
// watched roots' descendants, as watchdog_watched_processes{mode} says it
// for deaths. "walk" (no connector: no privilege, a container, or the
// operator's process_tree: walk) finds only what /proc's ppid chains show
// at the sweep and at each death; "off" (process_tree: off) keeps none.
var treeModeDesc = prometheus.NewDesc("watchdog_process_tree_mode",
	"How the daemon keeps each watched process's descendants: 1 for the mode in force, events (the kernel's process connector), walk (/proc walks at the sweep and at each death) or off (none kept).",
	[]string{"mode"}, nil)

// treeOverflowDesc is watchdog_process_tree_overflow_total: exits the
// tree missed, at its own full queue (cause "queue") or in the kernel's
// full socket buffer (cause "kernel", each followed by a walk of every
// tree). A death is still seen by its pidfd; what is lost is the exit
// status of a root never reaped.
var treeOverflowDesc = prometheus.NewDesc("watchdog_process_tree_overflow_total",
	"Process exits the process tree missed: dropped at its full queue (queue) or by the kernel under a fork storm (kernel, each followed by a /proc walk); deaths are still seen by pidfd.",
	[]string{"cause"}, nil)

// treeCollector reads the tree at scrape time: walk mode and no misses
// until the daemon sets the source (a CLI or a test without a daemon).
type treeCollector struct {
	src *atomic.Pointer[TreeSource]
}

func (c treeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- treeModeDesc
	ch <- treeOverflowDesc
}

func (c treeCollector) Collect(ch chan<- prometheus.Metric) {
	mode := "walk"
	var queue, kernel uint64
	if s := c.src.Load(); s != nil {
		mode, queue, kernel = s.Mode(), s.Overflows(), s.Lost()
	}
	for _, m := range treeModes {
		v := 0.0
		if m == mode {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(treeModeDesc, prometheus.GaugeValue, v, m)
	}
	ch <- prometheus.MustNewConstMetric(treeOverflowDesc, prometheus.CounterValue, float64(queue), "queue")
	ch <- prometheus.MustNewConstMetric(treeOverflowDesc, prometheus.CounterValue, float64(kernel), "kernel")
}

// ProcessTree sets where the process tree's metrics read (the daemon's
// proctree.Tree).
func (m *Metrics) ProcessTree(s TreeSource) { m.tree.Store(&s) }
