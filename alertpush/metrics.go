package alertpush

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of one request to one Alertmanager, pushes_total's label.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

// Why alerts were dropped unsent, alerts_dropped_total's label.
const (
	// DropSuperseded: a newer state replaced an unsent one, carrying its alerts again.
	DropSuperseded = "superseded"
	// DropOverflow: past the most alerts a state carries or resolutions waiting.
	DropOverflow = "overflow"
)

// Metrics are the pusher's counters, registered once: a reload replaces the pusher only.
type Metrics struct {
	pushes  *prometheus.CounterVec
	dropped *prometheus.CounterVec
}

// NewMetrics makes the counters, every label value pre-seeded, on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "watchdog_alertmanager_pushes_total",
			Help: "Requests to Alertmanager (each configured URL counts its own), by result: success, or error (refused, unreachable or timed out; retried with backoff).",
		}, []string{"result"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "watchdog_alertmanager_alerts_dropped_total",
			Help: "Alerts never sent, by reason: superseded (a newer state replaced an unsent one), overflow (past a bound).",
		}, []string{"reason"}),
	}
	for _, r := range []string{ResultSuccess, ResultError} {
		m.pushes.WithLabelValues(r)
	}
	for _, r := range []string{DropSuperseded, DropOverflow} {
		m.dropped.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.pushes, m.dropped} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register alertmanager metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *Metrics) push(result string) {
	if m != nil {
		m.pushes.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) drop(reason string, n int) {
	if m != nil && n > 0 {
		m.dropped.WithLabelValues(reason).Add(float64(n))
	}
}
