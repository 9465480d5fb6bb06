package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"watchdog/config"
	"watchdog/internal/testenv"
)

// Files under test, relative to this package's directory.
const (
	exampleConfig = "config.example.yaml"
	alertsFile    = "prometheus/alerts.yml"
	alertTests    = "prometheus/alerts_test.yml"
	dashboardFile = "grafana/watchdog.json"
	runbookFile   = "../docs/runbook.md"
	moduleRoot    = ".."
)

// specMetrics is the table of docs/reference/metrics.md: name and type. The alerts and
// the dashboard may use only these (and "up", which Prometheus adds); the
// real scrape in TestMetricNamesAreExported is the final word.
var specMetrics = map[string]string{
	"watchdog_entities":                     "gauge",
	"watchdog_entity_states":                "gauge",
	"watchdog_reasons_active":               "gauge",
	"watchdog_attention_items":              "gauge",
	"watchdog_legacy_entities":              "gauge",
	"watchdog_transitions_total":            "counter",
	"watchdog_transitions_rejected_total":   "counter",
	"watchdog_reaped_total":                 "counter",
	"watchdog_job_runs_total":               "counter",
	"watchdog_job_duration_seconds":         "histogram",
	"watchdog_last_sweep_timestamp_seconds": "gauge",
	"watchdog_build_info":                   "gauge",
}

// prometheusSynthesized are series Prometheus makes itself, never exported.
var prometheusSynthesized = map[string]bool{"up": true}

// exporterExtras are metrics the exporter adds beyond the original contract's table:
// node_exporter's convention for a scrape-time collector that can fail,
// the fleet's leader gauge (docs/fleet.md), the Alertmanager push's counters
// (docs/alerting.md, "Push alerts to Alertmanager") and the pidfd watcher's overflow
// counter (ADR-0039) and the process tree's mode and overflows and the
// leftover processes (ADR-0044), and what the live view holds (ADR-0056). TestMetricNamesAreExported checks them against a real scrape
// like the others; the dashboard need not show them.
var exporterExtras = map[string]string{
	"watchdog_scrape_collector_success":          "gauge",
	"watchdog_scrape_collector_duration_seconds": "gauge",
	"watchdog_leader":                            "gauge",
	"watchdog_alertmanager_pushes_total":         "counter",
	"watchdog_alertmanager_alerts_dropped_total": "counter",
	"watchdog_pidwatch_overflow_total":           "counter",
	"watchdog_process_tree_mode":                 "gauge",
	"watchdog_process_tree_overflow_total":       "counter",
	"watchdog_leftover_processes":                "gauge",
	"watchdog_view_entities":                     "gauge",
}

// --- Example config ----------------------------------------------------------

// TestConfigExampleIsDefault: the example sets every key to its default, so
// it documents the defaults truthfully.
func TestConfigExampleIsDefault(t *testing.T) {
	got, err := config.Load(exampleConfig)
	if err != nil {
		t.Fatalf("config.Load(%s): %v", exampleConfig, err)
	}
	want := config.Default()
	for _, d := range diffConfig("", reflect.ValueOf(*got), reflect.ValueOf(*want)) {
		t.Errorf("%s: %s", exampleConfig, d)
	}
	if !reflect.DeepEqual(got, want) && !t.Failed() {
		t.Errorf("%s differs from config.Default() in a way diffConfig does not show:\n got %+v\nwant %+v", exampleConfig, got, want)
	}
}

// diffConfig compares two config values field by field, by yaml key path.
func diffConfig(path string, got, want reflect.Value) []string {
	if got.Kind() == reflect.Struct {
		var out []string
		for i := range got.NumField() {
			f := got.Type().Field(i)
			out = append(out, diffConfig(joinKey(path, yamlKey(f)), got.Field(i), want.Field(i))...)
		}
		return out
	}
	if !reflect.DeepEqual(got.Interface(), want.Interface()) {
		return []string{fmt.Sprintf("%s is %q, the default is %q", path, fmt.Sprint(got.Interface()), fmt.Sprint(want.Interface()))}
	}
	return nil
}

// TestConfigExampleListsEveryKey: every key of config.Config (found through
// its yaml tags, so a new field cannot be forgotten) appears in the example,
// with a comment saying what it does.
func TestConfigExampleListsEveryKey(t *testing.T) {
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", exampleConfig, err)
	}
	keys := map[string]*yaml.Node{}
	collectKeys("", doc.Content[0], keys)

	want := configKeys("", reflect.TypeFor[config.Config]())
	if len(want) < 20 {
		t.Fatalf("found only %d config keys by reflection (%v): is the walk broken?", len(want), want)
	}
	for _, k := range want {
		n, ok := keys[k]
		switch {
		case !ok:
			t.Errorf("%s: key %q is missing (every key of config.Config must be listed with its default)", exampleConfig, k)
		case strings.TrimSpace(n.HeadComment+n.LineComment) == "":
			t.Errorf("%s: key %q (line %d) has no comment; add a one-line comment above it", exampleConfig, k, n.Line)
		}
	}
}

// configKeys lists the dotted yaml key paths of t's leaves.
func configKeys(prefix string, t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		key := yamlKey(f)
		if key == "" || key == "-" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			out = append(out, configKeys(joinKey(prefix, key), f.Type)...)
			continue
		}
		out = append(out, joinKey(prefix, key))
	}
	return out
}

func collectKeys(prefix string, n *yaml.Node, into map[string]*yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := joinKey(prefix, n.Content[i].Value)
		into[k] = n.Content[i]
		collectKeys(k, n.Content[i+1], into)
	}
}

func yamlKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return key
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// --- Alerts -----------------------------------------------------------------

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return rf
}

// TestAlertsAreActionable: every alert has a severity, a summary, a
// description and a runbook_url whose section exists in docs/runbook.md,
// and alerts_test.yml has a case where it fires and one where it stays
// quiet. promtool (scripts/deploy-check.sh) checks the syntax and runs the
// cases.
func TestAlertsAreActionable(t *testing.T) {
	rf := loadRules(t)
	anchors := runbookAnchors(t)
	fires, quiet := alertCases(t)
	n := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			switch r.Labels["severity"] {
			case "critical", "warning", "info":
			default:
				t.Errorf("%s: severity label %q is not critical, warning or info", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: annotation %s is missing", r.Alert, a)
				}
			}
			url := r.Annotations["runbook_url"]
			doc, anchor, _ := strings.Cut(url, "#")
			if doc != "docs/runbook.md" || anchor != strings.ToLower(r.Alert) {
				t.Errorf("%s: runbook_url %q, want docs/runbook.md#%s", r.Alert, url, strings.ToLower(r.Alert))
			} else if !anchors[anchor] {
				t.Errorf("%s: docs/runbook.md has no section %q (a heading \"## %s\")", r.Alert, anchor, r.Alert)
			}
			if !fires[r.Alert] {
				t.Errorf("%s: %s has no case where it fires", r.Alert, alertTests)
			}
			if !quiet[r.Alert] {
				t.Errorf("%s: %s has no case where it stays quiet", r.Alert, alertTests)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s holds no alerts", alertsFile)
	}
}

// runbookAnchors returns the GitHub anchors of the runbook's headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	nonWord := regexp.MustCompile(`[^a-z0-9 _-]`)
	for line := range strings.SplitSeq(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			a := nonWord.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
			anchors[strings.ReplaceAll(a, " ", "-")] = true
		}
	}
	return anchors
}

// alertCases reads alerts_test.yml: which alerts have a case with expected
// alerts, and which a case expecting none.
func alertCases(t *testing.T) (fires, quiet map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(data, &tf); err != nil {
		t.Fatalf("%s: %v", alertTests, err)
	}
	fires, quiet = map[string]bool{}, map[string]bool{}
	for _, c := range tf.Tests {
		for _, a := range c.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	return fires, quiet
}

// --- Dashboard --------------------------------------------------------------

func loadDashboard(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// TestDashboardIsImportable: panel ids are unique, every panel has a
// place, and every Prometheus query names its data source through the
// dashboard's ${datasource} variable (TestDashboardProvisions resolves it
// as Grafana does).
func TestDashboardIsImportable(t *testing.T) {
	d := loadDashboard(t)
	if d["uid"] == "" || d["title"] == "" {
		t.Error("uid and title must be set")
	}
	ids := map[float64]bool{}
	panels, _ := d["panels"].([]any)
	if len(panels) == 0 {
		t.Fatal("no panels")
	}
	for _, p := range panels {
		p := p.(map[string]any)
		id, _ := p["id"].(float64)
		if ids[id] {
			t.Errorf("panel %q: id %v is not unique", p["title"], id)
		}
		ids[id] = true
		if p["type"] == "row" {
			continue
		}
		if _, ok := p["gridPos"]; !ok {
			t.Errorf("panel %q has no gridPos", p["title"])
		}
	}
	walkJSON(d, func(key string, v any) {
		if key != "datasource" {
			return
		}
		ds, ok := v.(map[string]any)
		if !ok {
			t.Errorf("datasource %v is not an object with type and uid", v)
			return
		}
		if ds["type"] == "grafana" { // the built-in annotation source
			return
		}
		if ds["type"] != "prometheus" || ds["uid"] != "${datasource}" {
			t.Errorf("datasource %v, want {type: prometheus, uid: ${datasource}}", ds)
		}
	})
	if exprs := dashboardExprs(t, d); len(exprs) < 10 {
		t.Errorf("found only %d expressions in the dashboard: is the walk broken?", len(exprs))
	}
}

// dashboardExprs returns every PromQL expression of the dashboard: panel
// targets and query variables.
func dashboardExprs(t *testing.T, d map[string]any) []string {
	t.Helper()
	var exprs []string
	walkJSON(d, func(key string, v any) {
		if s, ok := v.(string); ok && key == "expr" && s != "" {
			exprs = append(exprs, s)
		}
	})
	tpl, _ := d["templating"].(map[string]any)
	list, _ := tpl["list"].([]any)
	for _, v := range list {
		v := v.(map[string]any)
		if v["type"] != "query" {
			continue
		}
		switch q := v["query"].(type) {
		case string:
			exprs = append(exprs, q)
		case map[string]any:
			if s, _ := q["query"].(string); s != "" {
				exprs = append(exprs, s)
			}
		}
	}
	return exprs
}

func walkJSON(v any, visit func(key string, v any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			visit(k, x)
			walkJSON(x, visit)
		}
	case []any:
		for _, x := range v {
			walkJSON(x, visit)
		}
	}
}

// TestDashboardExpressionsParse hands every dashboard expression to
// promtool as a recording rule (Grafana's variables replaced by values), so
// a typo fails here rather than as an empty panel. Needs promtool
// (scripts/deploy-check.sh installs it).
func TestDashboardExpressionsParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not installed: make test (scripts/deploy-check.sh) installs the Debian package prometheus")
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	grafanaVars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "$instance", ".*")
	for i, e := range dashboardExprs(t, loadDashboard(t)) {
		if strings.HasPrefix(e, "label_values(") {
			e = labelValues.ReplaceAllString(e, "$1") // a Grafana function, not PromQL
		}
		q, _ := json.Marshal(grafanaVars.Replace(e)) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      - record: dashboard:expr%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's expressions: %v\n%s\n%s", err, out, b.String())
	}
}

// --- Metric names -------------------------------------------------------------

// usedMetrics returns each metric name the alerts and the dashboard use,
// mapped to where it is used.
func usedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			for _, n := range metricNames(r.Expr) {
				used[n] = append(used[n], alertsFile+" "+r.Alert+r.Record)
			}
		}
	}
	for _, e := range dashboardExprs(t, loadDashboard(t)) {
		for _, n := range metricNames(e) {
			used[n] = append(used[n], dashboardFile)
		}
	}
	if len(used) == 0 {
		t.Fatal("no metric names found in the alerts or the dashboard")
	}
	return used
}

// TestMetricNamesFollowSpec: the alerts and the dashboard use only the
// metrics of docs/reference/metrics.md, and the dashboard shows every one of them.
func TestMetricNamesFollowSpec(t *testing.T) {
	kinds := map[string]string{}
	for n, k := range specMetrics {
		kinds[n] = k
	}
	for name, where := range usedMetrics(t) {
		if prometheusSynthesized[name] {
			continue
		}
		if _, extra := exporterExtras[name]; extra {
			continue
		}
		if _, ok := specMetrics[familyName(name, kinds)]; !ok {
			t.Errorf("%s (used in %s) is not a metric of docs/reference/metrics.md", name, strings.Join(uniq(where), ", "))
		}
	}
	inDashboard := map[string]bool{}
	for _, e := range dashboardExprs(t, loadDashboard(t)) {
		for _, n := range metricNames(e) {
			inDashboard[familyName(n, kinds)] = true
		}
	}
	for n := range specMetrics {
		if !inDashboard[n] {
			t.Errorf("the dashboard shows nothing of %s", n)
		}
	}
}

// TestMetricNamesAreExported builds cmd/watchdog, runs `watchdog serve` on a
// free loopback port and a scratch database, waits for /readyz (the first
// sweep ran), scrapes /metrics, stops it with SIGTERM, and checks that every
// metric name the alerts and the dashboard use is in the scrape. It skips
// only while `serve` is not built yet; once it is, a missing name fails.
func TestMetricNamesAreExported(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon; skipped with -short")
	}
	bin := buildWatchdog(t)

	scrape := scrapeDaemon(t, bin)
	// The exposition itself passes Prometheus' own linter (names, units,
	// HELP, counter suffixes), as promtool reads it from a real scrape.
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not installed: make test (scripts/deploy-check.sh) installs the Debian package prometheus")
	}
	lint := exec.Command(promtool, "check", "metrics")
	lint.Stdin = strings.NewReader(scrape)
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics on a real scrape: %v\n%s", err, out)
	}
	checkNamesExported(t, scrape)
}

// checkNamesExported fails t for every metric name the alerts and the
// dashboard use that is not in scrape (a /metrics body): histograms by
// their _bucket, _sum and _count series, Prometheus' own "up" aside.
func checkNamesExported(t *testing.T, scrape string) {
	t.Helper()
	exported, kinds := exposedNames(scrape)
	if len(exported) == 0 {
		t.Fatalf("the scrape holds no metrics:\n%s", scrape)
	}
	missing := false
	for name, where := range usedMetrics(t) {
		if prometheusSynthesized[name] {
			continue
		}
		if !exported[familyName(name, kinds)] {
			missing = true
			t.Errorf("%s (used in %s) is not in a scrape of `watchdog serve` after its first sweep. "+
				"Export it (a vector with no child emits nothing: pre-seed its known label values with 0, STYLE.md metrics/), "+
				"or stop using it", name, strings.Join(uniq(where), ", "))
		}
	}
	if missing {
		var ours []string
		for _, n := range sortedKeys(exported) {
			if strings.HasPrefix(n, "watchdog_") {
				ours = append(ours, n)
			}
		}
		t.Logf("watchdog_ names in the scrape: %s", strings.Join(ours, " "))
	}
}

// buildWatchdog is the watchdog binary, built once for this test process
// (testenv.BuildBinary). A module that does not build fails the test: the
// scrape is the point of it.
func buildWatchdog(t *testing.T) string {
	t.Helper()
	bin, err := testenv.BuildBinary()
	if err != nil {
		t.Fatalf("./cmd/watchdog does not build, so `watchdog serve` cannot be scraped: %s", firstLines(err.Error(), 11))
	}
	return bin
}

// TestMain removes the binary buildWatchdog built, which outlives every
// single test.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveBinary()
	os.Exit(code)
}

// scrapeDaemon runs `watchdog serve` with one registered entity (so the
// per-state gauge, which only reports combinations that exist, has
// something to say, as on any real host) and returns one /metrics body.
func scrapeDaemon(t *testing.T, bin string) string {
	t.Helper()
	d := startDaemon(t, bin, "auth: none\n")
	if code, body := d.do(t, "POST", "/api/v1/entities", `{"type":"session","id":"scrape-1","lifecycle":"running"}`); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	return d.scrape(t)
}

// get fetches url within the client's timeout (a poll's short one, or
// requestCeiling for a request that is not retried).
func get(c *http.Client, url string, into io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestCeiling)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, firstLine(string(b)))
	}
	if into != nil {
		_, err = into.Write(b)
	}
	return err
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// exposedNames parses the Prometheus text exposition format: the set of
// metric family names (from # TYPE and # HELP lines and from samples, with
// the _bucket, _sum and _count samples of histograms and summaries mapped
// to their family) and each family's type.
func exposedNames(text string) (names map[string]bool, kinds map[string]string) {
	names, kinds = map[string]bool{}, map[string]string{}
	var samples []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			f := strings.Fields(line)
			if len(f) >= 3 && (f[1] == "TYPE" || f[1] == "HELP") {
				names[f[2]] = true
				if f[1] == "TYPE" && len(f) >= 4 {
					kinds[f[2]] = f[3]
				}
			}
		default:
			if i := strings.IndexAny(line, "{ \t"); i > 0 {
				samples = append(samples, line[:i])
			}
		}
	}
	for _, s := range samples {
		names[s] = true
		names[familyName(s, kinds)] = true
	}
	return names, kinds
}

// familyName maps a histogram's or summary's _bucket, _sum or _count series
// name to its family name, given the families' types; other names are
// returned as they are.
func familyName(name string, kinds map[string]string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if k := kinds[base]; k == "histogram" || k == "summary" {
				return base
			}
		}
	}
	return name
}

// PromQL, just enough to find metric names: what is not a name is removed
// (strings, label matchers, ranges, grouping label lists, Grafana
// variables), then the identifiers left are names unless they call a
// function or aggregation, or are keywords.
var (
	labelValues   = regexp.MustCompile(`label_values\(\s*([^,()]*?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)`) // (metric, label)
	labelOnly     = regexp.MustCompile(`label_values\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)`)                  // (label): no metric
	grafanaVar    = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	promString    = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	labelMatchers = regexp.MustCompile(`\{[^}]*\}`)
	rangeOrSubq   = regexp.MustCompile(`\[[^\]]*\]`)
	groupingList  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords  = map[string]bool{
		"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true,
		"ignoring": true, "group_left": true, "group_right": true, "bool": true, "offset": true,
		"atan2": true, "inf": true, "nan": true,
	}
)

// metricNames returns the metric names an expression selects, sorted.
func metricNames(expr string) []string {
	e := labelValues.ReplaceAllString(expr, "$1")
	e = labelOnly.ReplaceAllString(e, "")
	e = promString.ReplaceAllString(e, `""`)
	e = grafanaVar.ReplaceAllString(e, "")
	e = labelMatchers.ReplaceAllString(e, " ")
	e = rangeOrSubq.ReplaceAllString(e, " ")
	e = groupingList.ReplaceAllString(e, " ")
	seen := map[string]bool{}
	for _, loc := range identifier.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("0123456789.", rune(e[loc[0]-1])) {
			continue // the unit of a duration or the exponent of a number
		}
		if strings.HasPrefix(strings.TrimLeft(e[loc[1]:], " \t\n"), "(") {
			continue // a function or an aggregation
		}
		if promKeywords[strings.ToLower(name)] {
			continue
		}
		seen[name] = true
	}
	return sortedKeys(seen)
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up{job="watchdog"} == 0 or absent(up{job="watchdog"})`, []string{"up"}},
		{`time() - watchdog_last_sweep_timestamp_seconds > 300`, []string{"watchdog_last_sweep_timestamp_seconds"}},
		{`histogram_quantile(0.95, sum by (instance, le) (rate(a_bucket{exported_job="sweep"}[15m]))) > 1e3`, []string{"a_bucket"}},
		{`sum by (x) (increase(b_total{reason_code=~"system\\.reaper\\..+", y!="rate(c)"}[1h])) > 10`, []string{"b_total"}},
		{`sum(d{s="critical"}) > 0 unless on (instance) (sum by (instance) (e) == 0)`, []string{"d", "e"}},
		{`f / ignoring(le) group_left g offset 5m`, []string{"f", "g"}},
		{`rate(h[$__rate_interval]) and i{instance=~"$instance"} > bool 1`, []string{"h", "i"}},
		{`sum without (a, b) (j) * on (k) group_left (l) m:recorded:rate5m`, []string{"j", "m:recorded:rate5m"}},
		{`max_over_time(n[1h:5m]) + Inf - NaN`, []string{"n"}},
		{`label_values(watchdog_build_info, instance)`, []string{"watchdog_build_info"}},
		{`label_values(instance)`, nil},
		{`topk(5, sort_desc(o))`, []string{"o"}},
	} {
		if got := metricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("metricNames(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestExposedNames(t *testing.T) {
	text := `# HELP a_seconds How long.
# TYPE a_seconds histogram
a_seconds_bucket{job="sweep",le="1"} 0
a_seconds_bucket{job="sweep",le="+Inf"} 1
a_seconds_sum{job="sweep"} 0.5
a_seconds_count{job="sweep"} 1
# TYPE b_total counter
b_total{result="ok"} 3
# TYPE c_count gauge
c_count 2
untyped_thing 1
`
	names, kinds := exposedNames(text)
	want := []string{"a_seconds", "a_seconds_bucket", "a_seconds_count", "a_seconds_sum", "b_total", "c_count", "untyped_thing"}
	if got := sortedKeys(names); !slices.Equal(got, want) {
		t.Errorf("names = %q, want %q", got, want)
	}
	for _, c := range []struct{ in, want string }{
		{"a_seconds_bucket", "a_seconds"},
		{"a_seconds_sum", "a_seconds"},
		{"c_count", "c_count"}, // a gauge that happens to end in _count
		{"b_total", "b_total"},
	} {
		if got := familyName(c.in, kinds); got != c.want {
			t.Errorf("familyName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return nil
	}
	return keys
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func firstLine(s string) string { return firstLines(s, 1) }

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
