package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// TreeSource is what the process tree's metrics read (proctree.Tree, ADR-0043).
type TreeSource struct {
	// Mode is "events", "walk" or "off".
	Mode func() string
	// Overflows counts exits dropped at the tree's full queue, Lost the kernel's drops.
	Overflows, Lost func() uint64
}

// treeModes are the label values of watchdog_process_tree_mode, pre-seeded.
var treeModes = []string{"events", "walk", "off"}

// treeModeDesc is watchdog_process_tree_mode.
var treeModeDesc = prometheus.NewDesc("watchdog_process_tree_mode",
	"How the daemon keeps each watched process's descendants: 1 for the mode in force, events (the kernel's process connector), walk (/proc walks at the sweep and at each death) or off (none kept).",
	[]string{"mode"}, nil)

// treeOverflowDesc is watchdog_process_tree_overflow_total.
var treeOverflowDesc = prometheus.NewDesc("watchdog_process_tree_overflow_total",
	"Process exits the process tree missed: dropped at its full queue (queue) or by the kernel under a fork storm (kernel, each followed by a /proc walk); deaths are still seen by pidfd.",
	[]string{"cause"}, nil)

// treeCollector reads the tree at scrape time: walk mode until the daemon sets it.
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

// ProcessTree sets where the process tree's metrics read.
func (m *Metrics) ProcessTree(s TreeSource) { m.tree.Store(&s) }
