package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// StreamCounts are the operator page's event stream counts.
type StreamCounts struct {
	// Open is how many streams are open now.
	Open int
	// Slow counts streams dropped because the client did not read in time.
	Slow uint64
	// Refused counts the streams refused at the stream cap.
	Refused uint64
}

// Why a page stream was dropped: watchdog_page_streams_dropped_total's reason.
const (
	// StreamDropSlow: the client did not read in time.
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

// streamsCollector reads the stream counts at scrape time; 0 until Streams.
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

// Streams sets where the page's stream metrics read their counts.
func (m *Metrics) Streams(fn func() StreamCounts) { m.streams.Store(&fn) }
