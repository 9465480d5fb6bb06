package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Why the HTTP server shed a connection or request (shed_total's reason; ADR-0034).
const (
	// ShedEvicted: a connection still waiting for headers, closed to make room.
	ShedEvicted = "evicted"
	// ShedRefused: a new connection closed at once, every open one busy.
	ShedRefused = "refused"
	// ShedBusy: a request other than the probes and /metrics answered 503.
	ShedBusy = "busy"
)

// ShedReasons are watchdog_http_connections_shed_total's reasons, pre-seeded.
var ShedReasons = []string{ShedEvicted, ShedRefused, ShedBusy}

var connsDesc = prometheus.NewDesc("watchdog_http_connections",
	"Open HTTP connections: waiting (for a request's headers, new or idle keep-alive) or active (a request being served).",
	[]string{"state"}, nil)

// connsCollector reads the counts at scrape time; 0 until Connections.
type connsCollector struct {
	src *atomic.Pointer[func() (waiting, active int)]
}

func (c connsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- connsDesc }

func (c connsCollector) Collect(ch chan<- prometheus.Metric) {
	var waiting, active int
	if fn := c.src.Load(); fn != nil {
		waiting, active = (*fn)()
	}
	ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(waiting), "waiting")
	ch <- prometheus.MustNewConstMetric(connsDesc, prometheus.GaugeValue, float64(active), "active")
}

func newShedCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "watchdog_http_connections_shed_total",
		Help: "HTTP connections closed or requests answered 503 at the server's bounds, by reason: evicted (waiting for headers, closed to make room), refused (closed at accept, every connection busy), busy (503, http.max_connections requests in flight).",
	}, []string{"reason"})
	for _, r := range ShedReasons {
		c.WithLabelValues(r)
	}
	return c
}

// Shed counts one connection or request shed at the HTTP server's bounds
// (reason one of ShedReasons, else "unknown").
func (m *Metrics) Shed(reason string) {
	switch reason {
	case ShedEvicted, ShedRefused, ShedBusy:
	default:
		reason = unknown
	}
	m.shed.WithLabelValues(reason).Inc()
}

// Connections sets where watchdog_http_connections reads its counts.
func (m *Metrics) Connections(fn func() (waiting, active int)) { m.conns.Store(&fn) }
