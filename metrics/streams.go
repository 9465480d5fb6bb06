package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// StreamCounts are the operator page's event streams (GET /events) as the
// page counts them.
type StreamCounts struct {
	// Open is how many streams are open now.
	Open int
	// Slow counts the streams dropped because the client did not read
	// what was sent within the write wait.
	Slow uint64
	// Refused counts the streams refused at the stream cap.
	Refused uint64
}

// Why a page stream was dropped (watchdog_page_streams_dropped_total's
// reason label).
const (
	// StreamDropSlow: the client did not read (a write blocked past the
	// stream's write wait).
	StreamDropSlow = "slow"
	// StreamDropRefused: the stream was refused at the cap (503).
	StreamDropRefused = "refused"
)

var (
	streamsDesc = prometheus.NewDesc("watchdog_page_streams",
		"Open event streams of the operator's page (GET /events): a visible tab holds one, a hidden tab none.",
		nil, nil)
	streamsDroppedDesc = prometheus.NewDesc("watchdog_page_streams_dropped_total",
		"Event streams of the operator's page ended or refused by the daemon, by reason: slow (the client did not read within the write wait), refused (over the stream cap).",
		[]string{"reason"}, nil)
)

// streamsCollector reads the page's stream counts at scrape time; every
// one reads 0 until the daemon sets the source (Streams).
type streamsCollector struct {
	src *atomic.Pointer[func() StreamCounts]
}

func (c streamsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- streamsDesc
	ch <- streamsDroppedDesc
}

func (c streamsCollector) Collect(ch chan<- prometheus.Metric) {
	var n StreamCounts
	if fn := c.src.Load(); fn != nil {
		n = (*fn)()
	}
	ch <- prometheus.MustNewConstMetric(streamsDesc, prometheus.GaugeValue, float64(n.Open))
	ch <- prometheus.MustNewConstMetric(streamsDroppedDesc, prometheus.CounterValue, float64(n.Slow), StreamDropSlow)
	ch <- prometheus.MustNewConstMetric(streamsDroppedDesc, prometheus.CounterValue, float64(n.Refused), StreamDropRefused)
}

// Streams sets where the page's stream metrics read their counts (the
// page handler).
func (m *Metrics) Streams(fn func() StreamCounts) { m.streams.Store(&fn) }
