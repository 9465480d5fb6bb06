package e2e

// The harness of issue 14's observations: a real daemon with short
// thresholds and every job each second, driven over its HTTP API with
// real processes and files, and one check that status, the queue and the
// metrics count alike whenever the world stands still.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/transitions"
	"watchdog/wire"
)

// truthSections are the short thresholds and one-second jobs the truth
// tests run under unless a test gives its own.
const truthSections = `thresholds:
  idle_after: 1s
  stalled_after: 2s
  terminal_grace: 1s
  phantom_after: 3s
  misfire_grace: 2s
  failure_window: 4s
jobs:
  sweep: "@every 1s"
  enforce_terminal: "@every 1s"
  reap_phantoms: "@every 1s"
  check_schedules: "@every 1s"
  vacuum: "@every 1s"
`

// truthStart starts a daemon without auth under sections (truthSections
// when empty).
func truthStart(t *testing.T, sections string) *rmtDaemon {
	t.Helper()
	if sections == "" {
		sections = truthSections
	}
	return rmtStartWith(t, false, sections)
}

// do sends one request with a JSON body (none when body is "") and
// returns the status and the response body.
func (d *rmtDaemon) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+rmtToken)
	}
	resp, err := (&http.Client{Timeout: ceiling}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// register POSTs a registration document and fails the test unless it
// was accepted.
func (d *rmtDaemon) register(t *testing.T, doc string) {
	t.Helper()
	if code, body := d.do(t, "POST", "/api/v1/entities", doc); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("register %s: %d %s", doc, code, body)
	}
}

// transition POSTs one transition and returns the status and body.
func (d *rmtDaemon) transition(t *testing.T, typ, id, body string) (int, string) {
	t.Helper()
	return d.do(t, "POST", "/api/v1/entities/"+typ+"/"+id+"/transitions", body)
}

// must reads the entity, which must exist.
func (d *rmtDaemon) must(t *testing.T, typ, id string) wire.Entity {
	t.Helper()
	code, e := d.entity(t, typ, id)
	if code != http.StatusOK {
		t.Fatalf("GET %s/%s: %d", typ, id, code)
	}
	return e
}

// seen waits until the daemon serves the entity, and returns it: a
// daemon sharing a store with others serves what another wrote once its
// change feed brings it (on PostgreSQL a notification), not at once.
func (d *rmtDaemon) seen(t *testing.T, typ, id string) wire.Entity {
	t.Helper()
	var e wire.Entity
	testenv.Eventually(t, fmt.Sprintf("%s/%s served by %s", typ, id, d.base), ceiling, func() (bool, string) {
		code, got := d.entity(t, typ, id)
		e = got
		return code == http.StatusOK, fmt.Sprintf("GET %s/%s: %d", typ, id, code)
	})
	return e
}

// queue reads GET /api/attention with query (e.g. "include_dismissed=true").
func (d *rmtDaemon) queue(t *testing.T, query string) attention.Queue {
	t.Helper()
	path := "/api/attention?limit=500"
	if query != "" {
		path += "&" + query
	}
	code, body := d.do(t, "GET", path, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var q attention.Queue
	if err := json.Unmarshal([]byte(body), &q); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return q
}

// item finds the queue item with fingerprint fp.
func item(q attention.Queue, fp string) (attention.Item, bool) {
	for _, it := range q.Items {
		if it.Fingerprint == fp {
			return it, true
		}
	}
	return attention.Item{}, false
}

// acknowledged returns the item an acknowledgement made on fp hides, served
// with include_dismissed: the item of fp, or the item whose reason
// subsumes the finding fp names, to which it carried over (dismissed_as).
func acknowledged(q attention.Queue, fp string) (attention.Item, bool) {
	for _, it := range q.Items {
		if it.Fingerprint == fp || (it.Dismissed && it.DismissedAs == fp) {
			return it, true
		}
	}
	return attention.Item{}, false
}

// jobRunsOK reads how many runs of job have ended ok, from the daemon's
// /metrics (0 before the first).
func (d *rmtDaemon) jobRunsOK(t *testing.T, job string) float64 {
	t.Helper()
	code, body := d.do(t, "GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if rest, ok := strings.CutPrefix(line, jobRuns(job)+" "); ok {
			var n float64
			if _, err := fmt.Sscan(rest, &n); err != nil {
				t.Fatalf("metric %s: %v", jobRuns(job), err)
			}
			return n
		}
	}
	return 0
}

// holds runs check (which fails the test itself) at every look, until
// job has run n more times than when called and at least atLeast has passed:
// what must stay true sweep after sweep is seen to stay true through n
// real runs, however slow a loaded machine makes them, and not through
// whatever number fits into a fixed time. n = 0 watches for atLeast alone.
func (d *rmtDaemon) holds(t *testing.T, job string, n int, atLeast time.Duration, check func()) {
	t.Helper()
	from, start := d.jobRunsOK(t, job), time.Now()
	testenv.Eventually(t, fmt.Sprintf("%d more %s runs, and %s", n, job, atLeast), ceiling, func() (bool, string) {
		check()
		now := d.jobRunsOK(t, job)
		return now >= from+float64(n) && time.Since(start) >= atLeast, fmt.Sprintf("%s: %v runs, from %v, %s in", job, now, from, time.Since(start).Round(time.Millisecond))
	})
	check()
}

// waitRuns waits until job has run n more times than when called: the
// daemon has had n chances to act (or to change what it must not).
func (d *rmtDaemon) waitRuns(t *testing.T, job string, n int) {
	t.Helper()
	d.holds(t, job, n, 0, func() {})
}

// logs is the daemon's log so far.
func (d *rmtDaemon) logs() string {
	b, _ := os.ReadFile(d.log)
	return string(b)
}

// countsView is what one surface says about the whole host.
type countsView struct {
	severities map[string]state.Severity // type/id → severity, every non-legacy entity
	open       int
	queue      map[state.Severity]int
}

// snapshot reads the list, `watchdog status --json` on the daemon's
// database, the queue and the scrape, once each.
func (d *rmtDaemon) snapshot(t *testing.T) (list, status countsView, queue attention.Queue, scrape countsView) {
	t.Helper()
	fromEntities := func(items []wire.Entity) countsView {
		v := countsView{severities: map[string]state.Severity{}}
		for _, e := range items {
			if e.State.Legacy() {
				continue
			}
			v.severities[e.Type+"/"+e.ID] = e.State.Severity
			if g, err := transitions.Lookup(e.Type); err == nil && !g.IsTerminal(e.State.Lifecycle) {
				v.open++
			}
		}
		return v
	}
	code, body := d.do(t, "GET", "/api/v1/entities?limit=500", "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/entities: %d %s", code, body)
	}
	var l wire.EntityList
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	list = fromEntities(l.Items)

	r := wd(t, "", "status", "--json", "--db", d.db)
	if r.code != 0 {
		t.Fatalf("watchdog status --json: %d %s", r.code, r.stderr)
	}
	var sl wire.EntityList
	if err := json.Unmarshal([]byte(r.stdout), &sl); err != nil {
		t.Fatalf("watchdog status --json: %v", err)
	}
	status = fromEntities(sl.Items)

	queue = d.queue(t, "")

	code, body = d.do(t, "GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	scrape = countsView{severities: map[string]state.Severity{}, queue: map[state.Severity]int{}}
	bySev := map[state.Severity]int{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			n := int(m.GetGauge().GetValue())
			switch name {
			case "watchdog_entities":
				bySev[state.Severity(labels["severity"])] += n
			case "watchdog_entity_states":
				if g, err := transitions.Lookup(labels["entity_type"]); err == nil && !g.IsTerminal(labels["lifecycle"]) {
					scrape.open += n
				}
			case "watchdog_attention_items":
				// By severity, summed over the entity types.
				if n > 0 {
					scrape.queue[state.Severity(labels["severity"])] += n
				}
			}
		}
	}
	// The scrape has counts, not entities: keep them under pseudo keys.
	for sev, n := range bySev {
		if n > 0 {
			scrape.severities[string(sev)] = state.Severity(fmt.Sprint(n))
		}
	}
	return list, status, queue, scrape
}

// bySeverity counts a view's entities per severity, in the scrape's
// pseudo-key form.
func (v countsView) bySeverity() map[string]state.Severity {
	n := map[state.Severity]int{}
	for _, s := range v.severities {
		n[s]++
	}
	out := map[string]state.Severity{}
	for s, c := range n {
		out[string(s)] = state.Severity(fmt.Sprint(c))
	}
	return out
}

// assertCountsAgree is issue 14's standing check: whenever two
// consecutive snapshots are identical (nothing moved in between), the
// list, `watchdog status`, the queue and the metrics agree on every
// entity's severity, the open count and the queue's count per severity.
// It retries while the world moves (for as long as the ceiling: a loaded
// machine only takes longer to stand still) and fails only when the
// surfaces disagree on a still one.
func (d *rmtDaemon) assertCountsAgree(t *testing.T) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(ceiling); time.Now().Before(deadline); {
		l1, s1, q1, m1 := d.snapshot(t)
		l2, s2, q2, m2 := d.snapshot(t)
		still := fmt.Sprint(l1, s1, q1.BySeverity, m1) == fmt.Sprint(l2, s2, q2.BySeverity, m2)
		if !still {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		qs := map[state.Severity]int{}
		for s, n := range q1.BySeverity {
			if n > 0 {
				qs[s] = n
			}
		}
		var bad []string
		if fmt.Sprint(l1.severities) != fmt.Sprint(s1.severities) {
			bad = append(bad, fmt.Sprintf("list severities %v, status %v", l1.severities, s1.severities))
		}
		if fmt.Sprint(l1.bySeverity()) != fmt.Sprint(m1.severities) {
			bad = append(bad, fmt.Sprintf("list by severity %v, watchdog_entities %v", l1.bySeverity(), m1.severities))
		}
		if l1.open != s1.open || l1.open != m1.open {
			bad = append(bad, fmt.Sprintf("open: list %d, status %d, watchdog_entity_states %d", l1.open, s1.open, m1.open))
		}
		if fmt.Sprint(qs) != fmt.Sprint(m1.queue) {
			bad = append(bad, fmt.Sprintf("queue by severity %v, watchdog_attention_items %v", qs, m1.queue))
		}
		if len(q1.Items) != q1.Total {
			bad = append(bad, fmt.Sprintf("queue total %d but %d items", q1.Total, len(q1.Items)))
		}
		if len(bad) > 0 {
			t.Fatalf("the surfaces disagree on a still host:\n  %s", strings.Join(bad, "\n  "))
		}
		return
	}
	t.Logf("assertCountsAgree: the host never stood still for two snapshots%s", last)
}

// TestTruthHarness checks the harness itself on a host with one
// critical entity: the counts agree, and a disagreement would be seen
// (the severity map is not empty, so the comparison has something to
// compare).
func TestTruthHarness(t *testing.T) {
	d := truthStart(t, "")
	p := testenv.DeadPID(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"h-1","lifecycle":"running","pid":%d}`, p))
	testenv.Eventually(t, "the dead pid judged", ceiling, func() (bool, string) {
		e := d.must(t, "session", "h-1")
		return e.State.Severity == state.SeverityCritical, e.Display
	})
	l, _, q, m := d.snapshot(t)
	if l.severities["session/h-1"] != state.SeverityCritical || m.severities["critical"] == "" || q.Total == 0 {
		t.Fatalf("harness sees nothing: list %v, scrape %v, queue %d", l.severities, m.severities, q.Total)
	}
	d.assertCountsAgree(t)
}
