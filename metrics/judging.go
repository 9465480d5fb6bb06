package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// A rise without deaths or changes says the daemon looks or writes more than it learns.
var (
	probesDesc = prometheus.NewDesc("watchdog_probes_total",
		"Looks at an entity's process and files (a probe), by every path that judges: the sweep, the monitor's deaths and deadlines, the one-shot steps.",
		nil, nil)
	observationsDesc = prometheus.NewDesc("watchdog_observations_written_total",
		"Observations (health, delivery, findings, a death and its exit status) written to the store because they changed.",
		nil, nil)
)

// judgingCollector reads the reaper's counts at scrape time; 0 until Judging.
type judgingCollector struct {
	src *atomic.Pointer[func() (probes, written uint64)]
}

func (c judgingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- probesDesc
	ch <- observationsDesc
}

func (c judgingCollector) Collect(ch chan<- prometheus.Metric) {
	var probes, written uint64
	if fn := c.src.Load(); fn != nil {
		probes, written = (*fn)()
	}
	ch <- prometheus.MustNewConstMetric(probesDesc, prometheus.CounterValue, float64(probes))
	ch <- prometheus.MustNewConstMetric(observationsDesc, prometheus.CounterValue, float64(written))
}

// Judging sets where the probe and observation counters read (reaper.Counts).
func (m *Metrics) Judging(fn func() (probes, written uint64)) { m.judging.Store(&fn) }
