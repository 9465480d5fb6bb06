package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// watchingDesc is watchdog_watched_processes: polled deaths are learned late.
var watchingDesc = prometheus.NewDesc("watchdog_watched_processes",
	"Local processes of open entities the daemon watches, by how it learns of their death: pidfd (at once) or poll (fallback).",
	[]string{"mode"}, nil)

// watchingCollector reads the two counts at scrape time; 0 until Watching.
type watchingCollector struct {
	src *atomic.Pointer[func() (pidfd, polled int)]
}

func (c watchingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- watchingDesc }

func (c watchingCollector) Collect(ch chan<- prometheus.Metric) {
	var pidfd, polled int
	if fn := c.src.Load(); fn != nil {
		pidfd, polled = (*fn)()
	}
	ch <- prometheus.MustNewConstMetric(watchingDesc, prometheus.GaugeValue, float64(pidfd), "pidfd")
	ch <- prometheus.MustNewConstMetric(watchingDesc, prometheus.GaugeValue, float64(polled), "poll")
}

// Watching sets where watchdog_watched_processes reads its counts.
func (m *Metrics) Watching(fn func() (pidfd, polled int)) { m.watching.Store(&fn) }

// overflowDesc is watchdog_pidwatch_overflow_total (ADR-0039).
var overflowDesc = prometheus.NewDesc("watchdog_pidwatch_overflow_total",
	"Process deaths the pidfd watcher dropped at its full queue; each drop makes the monitor re-check every watched process, so none is missed, but their exit status is lost.",
	nil, nil)

// countCollector reads a counter kept elsewhere at scrape time; 0 until set.
type countCollector struct {
	desc *prometheus.Desc
	src  *atomic.Pointer[func() uint64]
}

func (c countCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c countCollector) Collect(ch chan<- prometheus.Metric) {
	var n uint64
	if fn := c.src.Load(); fn != nil {
		n = (*fn)()
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n))
}

// PidwatchOverflows sets where watchdog_pidwatch_overflow_total reads its count.
func (m *Metrics) PidwatchOverflows(fn func() uint64) { m.overflows.Store(&fn) }

// heartbeatFilesDesc is watchdog_heartbeat_files.
var heartbeatFilesDesc = prometheus.NewDesc("watchdog_heartbeat_files",
	"Heartbeat files of open local entities, by how a touch is learned: inotify (at once) or poll (at the next deadline or sweep).",
	[]string{"mode"}, nil)

type heartbeatFilesCollector struct {
	src *atomic.Pointer[func() (watched, polled int)]
}

func (c heartbeatFilesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- heartbeatFilesDesc }

func (c heartbeatFilesCollector) Collect(ch chan<- prometheus.Metric) {
	var watched, polled int
	if fn := c.src.Load(); fn != nil {
		watched, polled = (*fn)()
	}
	ch <- prometheus.MustNewConstMetric(heartbeatFilesDesc, prometheus.GaugeValue, float64(watched), "inotify")
	ch <- prometheus.MustNewConstMetric(heartbeatFilesDesc, prometheus.GaugeValue, float64(polled), "poll")
}

// HeartbeatFiles sets where watchdog_heartbeat_files reads its counts.
func (m *Metrics) HeartbeatFiles(fn func() (watched, polled int)) { m.files.Store(&fn) }

// statsSkippedDesc is watchdog_heartbeat_file_stats_skipped_total.
var statsSkippedDesc = prometheus.NewDesc("watchdog_heartbeat_file_stats_skipped_total",
	"Looks at a heartbeat file watched by inotify that made no stat: no change was told since the file was last read.",
	nil, nil)

// HeartbeatFileStatsSkipped sets where watchdog_heartbeat_file_stats_skipped_total reads its count.
func (m *Metrics) HeartbeatFileStatsSkipped(fn func() uint64) { m.statsSkipped.Store(&fn) }
