package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestConnectionMetrics: every shed reason is there at 0 from the start
// (an alert on increase() sees the first), a reason outside the
// vocabulary counts as unknown, and the connection gauge reads the
// limiter's counts at scrape time (0 before one is set).
func TestConnectionMetrics(t *testing.T) {
	m, reg := newMetrics(t, newFixture(t).st)
	const head = `
# HELP watchdog_http_connections Open HTTP connections: waiting (for a request's headers, new or idle keep-alive) or active (a request being served).
# TYPE watchdog_http_connections gauge
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(head+`watchdog_http_connections{state="active"} 0
watchdog_http_connections{state="waiting"} 0
`), "watchdog_http_connections"); err != nil {
		t.Error(err)
	}
	m.Connections(func() (int, int) { return 7, 3 })
	for _, r := range []string{ShedEvicted, ShedEvicted, ShedBusy, "made-up"} {
		m.Shed(r)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(head+`watchdog_http_connections{state="active"} 3
watchdog_http_connections{state="waiting"} 7
`), "watchdog_http_connections"); err != nil {
		t.Error(err)
	}
	want := `
# HELP watchdog_http_connections_shed_total HTTP connections closed or requests answered 503 at the server's bounds, by reason: evicted (waiting for headers, closed to make room), refused (closed at accept, every connection busy), busy (503, http.max_connections requests in flight).
# TYPE watchdog_http_connections_shed_total counter
watchdog_http_connections_shed_total{reason="busy"} 1
watchdog_http_connections_shed_total{reason="evicted"} 2
watchdog_http_connections_shed_total{reason="refused"} 0
watchdog_http_connections_shed_total{reason="unknown"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "watchdog_http_connections_shed_total"); err != nil {
		t.Error(err)
	}
}
