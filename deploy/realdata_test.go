package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/internal/testenv"
)

// The dashboard and the rules against real data: the real daemon with
// entities in varied states, scraped by a real Prometheus (Debian package
// prometheus) that also loads alerts.yml; every panel query, interpolated
// as Grafana would, and every rule expression evaluated there.

// realDataSections are the jobs and thresholds of the daemon under test:
// every job each second and a short terminal grace, so dead processes are
// judged and ended (transitions, reaps) within seconds.
const realDataSections = `auth: none
thresholds:
  terminal_grace: 1s
jobs:
  sweep: "@every 1s"
  enforce_terminal: "@every 1s"
  reap_phantoms: "@every 1s"
  check_schedules: "@every 1s"
`

// realDataDeadline bounds every wait on the daemon or Prometheus: generous,
// as the machine may be busy.
const realDataDeadline = 3 * time.Minute

// requestCeiling bounds one request the test cannot retry (a query, a
// registration): generous for the same reason. Polls inside a wait keep
// short timeouts of their own, as the next poll follows.
const requestCeiling = 2 * time.Minute

// promScrapeInterval is how often the test's Prometheus scrapes and
// evaluates rules; the Grafana data source is set to the same.
const promScrapeInterval = time.Second

// grafanaStep is the $__interval the panel queries run with: a minute,
// so $__rate_interval (61s) keeps a single transition visible for a minute
// while the test evaluates every panel.
const grafanaStep = time.Minute

func TestDashboardAndRulesOnRealData(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon and Prometheus; skipped with -short")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not installed: make test installs the Debian package prometheus (Makefile APT_PACKAGES)")
	}
	d := startDaemon(t, buildWatchdog(t), realDataSections)
	prom := startPrometheus(t, promBin, d.addr)

	// Scraped once before anything happens, so the counters' first
	// increase is seen by rate().
	testenv.Eventually(t, "Prometheus scraping the daemon", realDataDeadline, func() (bool, string) {
		r, err := prom.query(`up{job="watchdog"} == 1`)
		return err == nil && len(r) == 1, fmt.Sprintf("%v %v\n%s", r, err, prom.logs.String())
	})

	live := testenv.Sleep(t)
	for _, doc := range []string{
		fmt.Sprintf(`{"type":"session","id":"live-1","lifecycle":"running","pid":%d}`, live.Process.Pid),
		fmt.Sprintf(`{"type":"session","id":"dead-1","lifecycle":"running","pid":%d}`, testenv.DeadPID(t)),
		`{"type":"play","id":"failed-1","lifecycle":"running"}`,
		`{"type":"workflow","id":"held-1","lifecycle":"held"}`,
	} {
		if code, body := d.do(t, "POST", "/api/v1/entities", doc); code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("register %s: %d %s", doc, code, body)
		}
	}

	// The play fails by its orchestrator's word: a terminal state, so its
	// critical item stays the one it is (a live entity's judgement may
	// still change, and a new reason is a new item). The session's dead
	// process is judged and the reaper ends it: a transition and a reap
	// for the write path's panels. Then every play item is dismissed, the
	// issue's case in miniature: a type whose items are all dismissed
	// beside one whose items are not.
	if code, body := d.do(t, "POST", "/api/v1/entities/play/failed-1/transitions",
		`{"to":"failed","actor":"orchestrator","reason":{"code":"run.failed.exit_nonzero"}}`); code != http.StatusOK {
		t.Fatalf("fail play/failed-1: %d %s", code, body)
	}
	testenv.Eventually(t, "session/dead-1 ended by the reaper", realDataDeadline, func() (bool, string) {
		lc := d.lifecycle(t, "session", "dead-1")
		return lc != "running", lc
	})
	var playItems []string
	testenv.Eventually(t, "critical session and play items in the queue", realDataDeadline, func() (bool, string) {
		types, fps := d.criticalItems(t)
		playItems = fps["play"]
		return types["session"] > 0 && types["play"] > 0, fmt.Sprint(types)
	})
	for _, fp := range playItems {
		if code, body := d.do(t, "POST", "/api/attention/dismiss", fmt.Sprintf(`{"fingerprint":%q}`, fp)); code != http.StatusOK {
			t.Fatalf("dismiss %s: %d %s", fp, code, body)
		}
	}
	scrape := d.scrape(t)
	withType := attentionHasEntityType(scrape)
	if !withType {
		t.Log("watchdog_attention_items has no entity_type label in this build (the gauges change adds it): " +
			"checks of that label are skipped")
	} else {
		// Prometheus scrapes every second: the checks below read what it
		// stored, so wait until it has scraped the daemon after the
		// dismissals (on a loaded machine a query right away can still
		// see the scrape from before them).
		testenv.Eventually(t, "Prometheus to scrape the dismissals", realDataDeadline, func() (bool, string) {
			res, err := prom.queryAt(prom.url, `sum(watchdog_attention_items{severity="critical",entity_type="play"})`, time.Now())
			return err == nil && len(res) == 1 && res[0].values[0] == 0, fmt.Sprint(res, err)
		})
	}

	dash, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	sources := []grafanaDatasource{{Name: "Prometheus", Type: "prometheus", UID: "test-prometheus", URL: prom.url, IsDefault: true}}
	p, err := provisionDashboard(dash, sources)
	if err != nil {
		t.Fatalf("%s does not provision: %v", dashboardFile, err)
	}

	// The variable's own query, as Grafana runs label_values(metric, label).
	var instances []string
	for _, tg := range p.Targets {
		if tg.PanelType != "variable" {
			continue
		}
		m := labelValues.FindStringSubmatch(tg.Expr)
		if m == nil {
			t.Fatalf("%s: %q is not label_values(metric, label)", tg.Panel, tg.Expr)
		}
		label := strings.TrimSpace(tg.Expr[strings.LastIndex(tg.Expr, ",")+1 : len(tg.Expr)-1])
		vals, err := prom.labelValues(tg.Source.URL, label, m[1])
		if err != nil {
			t.Fatalf("%s: %v", tg.Panel, err)
		}
		if !slices.Contains(vals, d.addr) {
			t.Fatalf("%s: %s gives %v, want the daemon's %s among them", tg.Panel, tg.Expr, vals, d.addr)
		}
		instances = vals
	}
	if instances == nil {
		t.Fatal("the dashboard has no instance variable")
	}

	// A transition and a reap happened (the reaper ended the dead
	// processes): wait until the write path's panels have them, so the
	// non-zero filter is seen passing real values, not only hiding zeros.
	all := grafanaQuery{ScrapeInterval: promScrapeInterval, Interval: grafanaStep, Range: time.Hour,
		Values: map[string]string{"instance": ".*"}}
	for _, title := range []string{"Transitions", "Reaped", "Job runs by result"} {
		tg := targetOf(t, p, title)
		expr, err := all.interpolate(tg.Expr)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "panel "+title+" to show a series", realDataDeadline, func() (bool, string) {
			r, err := prom.queryAt(tg.Source.URL, expr, time.Now())
			return err == nil && len(r) > 0, fmt.Sprintf("%v %v", r, err)
		})
	}

	for _, sel := range []struct {
		name  string
		query grafanaQuery
	}{
		{"instance=All", all},
		{"instance=" + d.addr, grafanaQuery{ScrapeInterval: promScrapeInterval, Interval: grafanaStep, Range: time.Hour,
			Values: map[string]string{"instance": promRegexEscape(d.addr)}}},
	} {
		for _, tg := range p.Targets {
			if tg.PanelType == "variable" {
				continue
			}
			expr, err := sel.query.interpolate(tg.Expr)
			if err != nil {
				t.Errorf("%s (%s): %v", tg.Panel, sel.name, err)
				continue
			}
			var res []promSeries
			if tg.Instant {
				res, err = prom.queryAt(tg.Source.URL, expr, time.Now())
			} else {
				res, err = prom.queryRange(tg.Source.URL, expr, time.Now().Add(-20*time.Second), time.Now(), promScrapeInterval)
			}
			if err != nil {
				t.Errorf("panel %s (%s): %s: %v", tg.Panel, sel.name, expr, err)
				continue
			}
			if tg.PanelType == "timeseries" || tg.PanelType == "table" {
				for _, s := range res {
					for _, v := range s.values {
						if v == 0 || math.IsNaN(v) {
							t.Errorf("panel %s (%s) draws a series at %v: %v; filter it out (> 0)", tg.Panel, sel.name, v, s.labels)
							break
						}
					}
				}
			}
			checkGrouping(t, "panel "+tg.Panel+" ("+sel.name+")", tg.Expr, res, withType)
			checkSelectors(t, prom, "panel "+tg.Panel+" ("+sel.name+")", expr)
		}
	}

	// The rules, as Prometheus itself loaded and evaluated them.
	testenv.Eventually(t, "every rule evaluated by Prometheus", realDataDeadline, func() (bool, string) {
		rules, err := prom.rules()
		if err != nil {
			return false, err.Error()
		}
		var pending []string
		for _, r := range rules {
			if r.LastEvaluation.IsZero() || r.LastEvaluation.Year() < 2000 {
				pending = append(pending, r.Name)
			}
		}
		return len(rules) > 0 && len(pending) == 0, fmt.Sprintf("not evaluated yet: %v", pending)
	})
	rules, err := prom.rules()
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]bool{}
	for _, r := range rules {
		loaded[r.Name] = true
		if r.Health != "ok" || r.LastError != "" {
			t.Errorf("rule %s: health %q, error %q", r.Name, r.Health, r.LastError)
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if !loaded[name] {
				t.Errorf("rule %s of %s is not loaded by Prometheus", name, alertsFile)
			}
			res, err := prom.queryAt(prom.url, r.Expr, time.Now())
			if err != nil {
				t.Errorf("rule %s: %v", name, err)
				continue
			}
			checkGrouping(t, "rule "+name, r.Expr, res, withType)
			checkSelectors(t, prom, "rule "+name, r.Expr)
			if name != "WatchdogCriticalEntities" || !withType {
				continue
			}
			// Its condition (before for:) holds for exactly the types the
			// queue shows open critical items of: the session, not the
			// play, whose items are all dismissed.
			var types, want []string
			for _, s := range res {
				types = append(types, s.labels["entity_type"])
			}
			open, _ := d.criticalItems(t)
			for typ, n := range open {
				if n > 0 {
					want = append(want, typ)
				}
			}
			slices.Sort(types)
			slices.Sort(want)
			if !slices.Equal(want, []string{"session"}) {
				t.Errorf("the queue's open critical items are of types %v, want [session]: the scenario did not happen", want)
			}
			if !slices.Equal(types, want) {
				t.Errorf("rule %s matches entity types %v, want %v (the types with open critical items; play's are dismissed)", name, types, want)
			}
		}
	}

	// Every metric name the dashboard and the rules use is in this scrape
	// of a daemon with entities in varied states.
	checkNamesExported(t, scrape)
}

// targetOf is the first query of the dashboard's panel titled title.
func targetOf(t *testing.T, p *provisionedDashboard, title string) provisionedTarget {
	t.Helper()
	for _, tg := range p.Targets {
		if tg.Panel == title {
			return tg
		}
	}
	t.Fatalf("the dashboard has no panel %q", title)
	return provisionedTarget{}
}

// byClause is a PromQL grouping clause, "by (a, b)".
var byClause = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)

// checkGrouping fails t when a result series lacks a label the expression
// groups by: the label does not exist on the metric, so the query
// silently lumps together what it means to tell apart (the issue's
// WatchdogCriticalEntities). le is consumed by histogram_quantile.
// entity_type on watchdog_attention_items is checked only where the build
// exports it (withType).
func checkGrouping(t *testing.T, where, expr string, res []promSeries, withType bool) {
	t.Helper()
	for _, m := range byClause.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			l = strings.TrimSpace(l)
			if l == "" || l == "le" {
				continue
			}
			if l == "entity_type" && !withType && strings.Contains(expr, "watchdog_attention_items") {
				continue
			}
			for _, s := range res {
				if s.labels[l] == "" {
					t.Errorf("%s: a result series has no %s label (%v), though the expression groups by it: %s", where, l, s.labels, expr)
					break
				}
			}
		}
	}
}

// selector is a PromQL series selector with label matchers.
var selector = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*\{[^}]*\}`)

// checkSelectors fails t for each series selector of expr that selects
// nothing in prom: a label value that does not exist (a typo, a job or
// reason code the daemon does not have) makes an alert that can never
// fire. Every vector the rules and panels read is pre-seeded, so each
// selector finds series on a healthy daemon.
func checkSelectors(t *testing.T, prom *promServer, where, expr string) {
	t.Helper()
	for _, sel := range selector.FindAllString(expr, -1) {
		res, err := prom.query("count(" + sel + ")")
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if len(res) == 0 {
			t.Errorf("%s: %s selects no series in a scrape of the daemon: a label or value it does not emit", where, sel)
		}
	}
}

// attentionHasEntityType says whether the scrape's watchdog_attention_items
// carries the entity_type label.
func attentionHasEntityType(scrape string) bool {
	for line := range strings.SplitSeq(scrape, "\n") {
		if strings.HasPrefix(line, "watchdog_attention_items{") && strings.Contains(line, "entity_type=") {
			return true
		}
	}
	return false
}

// --- The daemon ----------------------------------------------------------------

// daemonProc is a running `watchdog serve`.
type daemonProc struct {
	addr, base string
	logs       *testenv.Buffer
}

// startDaemon runs `watchdog serve` on a free loopback port and a scratch
// database, with sections (YAML: auth, thresholds, jobs, …) added to its
// config, and waits for /readyz (the first sweep ran). The daemon is
// stopped with SIGTERM when the test ends, and must then exit with status
// 0: systemd's Restart=on-failure would otherwise count a stop as a
// failure.
func startDaemon(t *testing.T, bin, sections string) *daemonProc {
	t.Helper()
	dir := t.TempDir()
	d := &daemonProc{addr: freeLoopbackAddr(t), logs: &testenv.Buffer{}}
	d.base = "http://" + d.addr
	cfg := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf("listen: %s\nstore:\n  dsn: %s\nlog:\n  format: json\n%s", d.addr, filepath.Join(dir, "watchdog.db"), sections)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = d.logs, d.logs
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NOTIFY_SOCKET=") || strings.HasPrefix(kv, "WATCHDOG_")
	})
	exited := startProcess(t, "watchdog serve", cmd, d.logs, true)

	client := &http.Client{Timeout: 5 * time.Second}
	testenv.Eventually(t, "watchdog serve to be ready", realDataDeadline, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("watchdog serve exited before it was ready (%v):\n%s", err, d.logs.String())
		default:
		}
		err := get(client, d.base+"/readyz", nil)
		return err == nil, fmt.Sprintf("/readyz: %v\n%s", err, d.logs.String())
	})
	return d
}

// do sends one request with a JSON body (none when body is "") and
// returns the status and the response body.
func (d *daemonProc) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, d.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: requestCeiling}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lifecycle is the stored lifecycle of an entity that must exist.
func (d *daemonProc) lifecycle(t *testing.T, typ, id string) string {
	t.Helper()
	code, body := d.do(t, "GET", "/api/v1/entities/"+typ+"/"+id, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s/%s: %d %s", typ, id, code, body)
	}
	var e struct {
		Lifecycle *string `json:"lifecycle"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Lifecycle == nil {
		t.Fatalf("GET %s/%s: no lifecycle in %s (%v)", typ, id, body, err)
	}
	return *e.Lifecycle
}

// criticalItems reads the attention queue's critical items (dismissed ones
// left out): how many per entity type, and their fingerprints.
func (d *daemonProc) criticalItems(t *testing.T) (perType map[string]int, fingerprints map[string][]string) {
	t.Helper()
	code, body := d.do(t, "GET", "/api/attention?severity=critical&limit=500", "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/attention: %d %s", code, body)
	}
	var q struct {
		Items []struct {
			Fingerprint string `json:"fingerprint"`
			Entity      struct {
				Type string `json:"type"`
			} `json:"entity"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &q); err != nil {
		t.Fatalf("GET /api/attention: %v", err)
	}
	perType, fingerprints = map[string]int{}, map[string][]string{}
	for _, it := range q.Items {
		perType[it.Entity.Type]++
		fingerprints[it.Entity.Type] = append(fingerprints[it.Entity.Type], it.Fingerprint)
	}
	return perType, fingerprints
}

// scrape is one /metrics body.
func (d *daemonProc) scrape(t *testing.T) string {
	t.Helper()
	code, body := d.do(t, "GET", "/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, firstLine(body))
	}
	return body
}

// --- Prometheus ----------------------------------------------------------------

// promServer is a Prometheus the test started.
type promServer struct {
	url  string
	logs *testenv.Buffer
}

// startPrometheus runs Prometheus on a free loopback port with its TSDB in
// a temp dir, scraping target as job "watchdog" and evaluating alerts.yml
// every promScrapeInterval, and waits until it is ready. It is stopped
// when the test ends.
func startPrometheus(t *testing.T, bin, target string) *promServer {
	t.Helper()
	return startPrometheusWith(t, bin, fmt.Sprintf(`  - job_name: watchdog
    static_configs:
      - targets: [%q]
`, target))
}

// startPrometheusWith is startPrometheus with scrapeConfigs (YAML list
// items under scrape_configs) as its jobs.
func startPrometheusWith(t *testing.T, bin, scrapeConfigs string) *promServer {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	iv := promScrapeInterval.String()
	body := fmt.Sprintf(`global:
  scrape_interval: %s
  evaluation_interval: %s
rule_files:
  - %q
scrape_configs:
%s`, iv, iv, rules, scrapeConfigs)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	p := &promServer{url: "http://" + addr, logs: &testenv.Buffer{}}
	cmd := exec.Command(bin,
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	exited := startProcess(t, "prometheus", cmd, p.logs, false)
	client := &http.Client{Timeout: 5 * time.Second}
	testenv.Eventually(t, "prometheus to be ready", realDataDeadline, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited before it was ready (%v):\n%s", err, p.logs.String())
		default:
		}
		err := get(client, p.url+"/-/ready", nil)
		return err == nil, fmt.Sprintf("/-/ready: %v", err)
	})
	return p
}

// promSeries is one series of a query result: its labels and its values
// (one for an instant query).
type promSeries struct {
	labels map[string]string
	values []float64
}

// api GETs a Prometheus HTTP API path and decodes data into into; an
// error answer is returned as the error, with the query's own message.
func (p *promServer) api(base, path string, params url.Values, into any) error {
	var body strings.Builder
	err := get(&http.Client{Timeout: requestCeiling}, base+path+"?"+params.Encode(), &body)
	if err != nil {
		return err
	}
	var resp struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(body.String()), &resp); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if resp.Status != "success" {
		return fmt.Errorf("%s: %s", path, resp.Error)
	}
	return json.Unmarshal(resp.Data, into)
}

// query is an instant query at now against this Prometheus.
func (p *promServer) query(expr string) ([]promSeries, error) {
	return p.queryAt(p.url, expr, time.Now())
}

// queryAt runs an instant query against the data source at base, as a
// table or stat panel does.
func (p *promServer) queryAt(base, expr string, at time.Time) ([]promSeries, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	params := url.Values{"query": {expr}, "time": {strconv.FormatInt(at.Unix(), 10)}}
	if err := p.api(base, "/api/v1/query", params, &data); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: a %s, want a vector", expr, data.ResultType)
	}
	out := make([]promSeries, 0, len(data.Result))
	for _, r := range data.Result {
		v, err := sampleValue(r.Value[1])
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", expr, err)
		}
		out = append(out, promSeries{labels: r.Metric, values: []float64{v}})
	}
	return out, nil
}

// queryRange runs a range query against the data source at base, as a
// time series panel does.
func (p *promServer) queryRange(base, expr string, from, to time.Time, step time.Duration) ([]promSeries, error) {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	params := url.Values{"query": {expr}, "start": {strconv.FormatInt(from.Unix(), 10)},
		"end": {strconv.FormatInt(to.Unix(), 10)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	if err := p.api(base, "/api/v1/query_range", params, &data); err != nil {
		return nil, fmt.Errorf("query_range %s: %w", expr, err)
	}
	out := make([]promSeries, 0, len(data.Result))
	for _, r := range data.Result {
		s := promSeries{labels: r.Metric}
		for _, pt := range r.Values {
			v, err := sampleValue(pt[1])
			if err != nil {
				return nil, fmt.Errorf("query_range %s: %w", expr, err)
			}
			s.values = append(s.values, v)
		}
		out = append(out, s)
	}
	return out, nil
}

// labelValues is what Grafana's label_values(metric, label) asks of the
// data source at base.
func (p *promServer) labelValues(base, label, metric string) ([]string, error) {
	var vals []string
	err := p.api(base, "/api/v1/label/"+url.PathEscape(label)+"/values", url.Values{"match[]": {metric}}, &vals)
	return vals, err
}

// promRule is a rule as GET /api/v1/rules reports it.
type promRule struct {
	Name           string    `json:"name"`
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

// rules lists every loaded rule.
func (p *promServer) rules() ([]promRule, error) {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := p.api(p.url, "/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// sampleValue parses a sample value as the API encodes it (a string, so
// NaN and ±Inf fit).
func sampleValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}

// startProcess starts cmd (a server a test needs: the daemon, Prometheus,
// Alertmanager) with its output in logs, and stops it with SIGTERM when
// the test ends (SIGKILL after 30 s), printing logs if the test failed.
// strict also fails the test when the process does not exit 0 on SIGTERM.
// The returned channel yields the exit once: a reader that only peeks puts
// it back.
func startProcess(t *testing.T, name string, cmd *exec.Cmd, logs *testenv.Buffer, strict bool) chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && strict {
			t.Errorf("SIGTERM %s: %v", name, err)
		}
		select {
		case err := <-exited:
			if err != nil && strict {
				t.Errorf("%s after SIGTERM: %v, want exit status 0", name, err)
			}
		case <-time.After(requestCeiling):
			_ = cmd.Process.Kill()
			<-exited
			if strict {
				t.Errorf("%s still running %s after SIGTERM", name, requestCeiling)
			}
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, logs.String())
		}
	})
	return exited
}
