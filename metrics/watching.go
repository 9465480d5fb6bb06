package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// watchingDesc is watchdog_watched_processes: how the daemon learns of the
// deaths of the processes it watches. "pidfd" ones are seen the moment
// they exit; "poll" ones (no pidfd: another OS, an old kernel, beyond the
// daemon's pidfd cap or out of file descriptors, or a pid with no recorded
// start time) only when the
// monitor next polls them, so a non-zero poll count is worth a look.
var watchingDesc = prometheus.NewDesc("watchdog_watched_processes",
	"Local processes of open entities the daemon watches, by how it learns of their death: pidfd (at once) or poll (fallback).",
	[]string{"mode"}, nil)

// watchingCollector reads the two counts at scrape time; both read 0
// until the daemon sets the source (a CLI or test without a monitor).
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

// Watching sets where watchdog_watched_processes reads its counts (the
// monitor's Watching).
func (m *Metrics) Watching(fn func() (pidfd, polled int)) { m.watching.Store(&fn) }

// overflowDesc is watchdog_pidwatch_overflow_total: deaths the pidfd
// watcher dropped at its full queue (pidwatch.QueueMax). None is lost
// (the monitor then looks at every watched process, and the dead are
// judged as their deaths would have been), but the dead found that way
// lose their exit status, and a rise says the monitor fell far behind.
var overflowDesc = prometheus.NewDesc("watchdog_pidwatch_overflow_total",
	"Process deaths the pidfd watcher dropped at its full queue; each drop makes the monitor re-check every watched process, so none is missed, but their exit status is lost.",
	nil, nil)

// overflowCollector reads the watcher's count at scrape time: 0 until the
// daemon sets the source, and with no watcher (every process polled).
type overflowCollector struct {
	src *atomic.Pointer[func() uint64]
}

func (c overflowCollector) Describe(ch chan<- *prometheus.Desc) { ch <- overflowDesc }

func (c overflowCollector) Collect(ch chan<- prometheus.Metric) {
	var n uint64
	if fn := c.src.Load(); fn != nil {
		n = (*fn)()
	}
	ch <- prometheus.MustNewConstMetric(overflowDesc, prometheus.CounterValue, float64(n))
}

// PidwatchOverflows sets where watchdog_pidwatch_overflow_total reads its
// count (the pidfd watcher's Overflows).
func (m *Metrics) PidwatchOverflows(fn func() uint64) { m.overflows.Store(&fn) }

// heartbeatFilesDesc is watchdog_heartbeat_files: how the daemon learns of
// a touch of an open entity's heartbeat file. "inotify" ones are judged
// when touched; "poll" ones (beyond monitor.MaxFileDirs directories, or
// no inotify) only at their deadlines and by the sweep.
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

// HeartbeatFiles sets where watchdog_heartbeat_files reads its counts
// (the monitor's HeartbeatFiles).
func (m *Metrics) HeartbeatFiles(fn func() (watched, polled int)) { m.files.Store(&fn) }
