package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// What Grafana's file provisioning does with a dashboard, emulated: Grafana
// itself is not packaged for Debian, and what matters can be checked
// without it. Provisioning (unlike the UI's import) reads the JSON file as
// the dashboard model: it never looks at __inputs, so a ${DS_…} input stays
// a literal string and its panels find no data source ("Datasource named
// ${DS_PROMETHEUS} was not found"). A data source template variable is
// resolved when the dashboard loads, to the variable's current data source
// or else the default one of its plugin type, by both paths alike.

// grafanaDatasource is a data source as a Grafana instance has it
// (provisioned from datasources/*.yaml or created in the UI).
type grafanaDatasource struct {
	Name, Type, UID, URL string
	IsDefault            bool
}

// provisionedTarget is one query of a provisioned dashboard, its data
// source resolved.
type provisionedTarget struct {
	Panel     string // panel title, or "variable NAME"
	PanelType string // timeseries, table, stat, …; "variable" for a query variable
	Expr      string
	Instant   bool
	Source    grafanaDatasource
}

// provisionedDashboard is a dashboard after emulated file provisioning.
type provisionedDashboard struct {
	Targets []provisionedTarget
	// Vars are the template variables by name, with their JSON model.
	Vars map[string]map[string]any
}

// grafanaBuiltins are the variables Grafana itself defines, which a
// dashboard may use without declaring them.
var grafanaBuiltins = []string{"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms", "__dashboard", "__from", "__to"}

// grafanaVarRef is a variable reference in any of Grafana's three syntaxes:
// $name, ${name} (optionally ${name:format}) and [[name]].
var grafanaVarRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)

// provisionDashboard loads raw as file provisioning does, against the data
// sources of a Grafana instance, and resolves every data source reference.
// It returns an error naming the first reference that does not resolve.
func provisionDashboard(raw []byte, sources []grafanaDatasource) (*provisionedDashboard, error) {
	if i := bytes.Index(raw, []byte("${DS_")); i >= 0 {
		return nil, fmt.Errorf("byte %d: %q is an import input, which file provisioning leaves unresolved", i, raw[i:min(len(raw), i+20)])
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if _, ok := d["__inputs"]; ok {
		return nil, fmt.Errorf("__inputs: only the UI's import reads it; file provisioning needs a data source variable instead")
	}
	if uid, _ := d["uid"].(string); uid == "" {
		return nil, fmt.Errorf("uid is not set: provisioning needs it to keep the dashboard's identity across reloads")
	}
	if id, ok := d["id"]; ok && id != nil {
		return nil, fmt.Errorf("id is %v: a provisioned dashboard leaves it null, Grafana assigns it", id)
	}

	p := &provisionedDashboard{Vars: map[string]map[string]any{}}
	dsVars := map[string]grafanaDatasource{}
	tpl, _ := d["templating"].(map[string]any)
	list, _ := tpl["list"].([]any)
	for _, v := range list {
		v, _ := v.(map[string]any)
		name, _ := v["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("templating: a variable has no name")
		}
		p.Vars[name] = v
		if v["type"] != "datasource" {
			continue
		}
		plugin, _ := v["query"].(string)
		src, err := pickDatasource(plugin, v["current"], sources)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", name, err)
		}
		dsVars[name] = src
	}

	resolve := func(where string, ref any) (grafanaDatasource, error) {
		m, ok := ref.(map[string]any)
		if !ok {
			return grafanaDatasource{}, fmt.Errorf("%s: datasource %v is not an object with type and uid", where, ref)
		}
		uid, _ := m["uid"].(string)
		typ, _ := m["type"].(string)
		var src grafanaDatasource
		if sm := grafanaVarRef.FindStringSubmatch(uid); sm != nil && sm[0] == uid {
			name := sm[1] + sm[2] + sm[3]
			s, ok := dsVars[name]
			if !ok {
				return grafanaDatasource{}, fmt.Errorf("%s: datasource uid %q names no data source variable of the dashboard", where, uid)
			}
			src = s
		} else {
			i := slices.IndexFunc(sources, func(s grafanaDatasource) bool { return s.UID == uid })
			if i < 0 {
				return grafanaDatasource{}, fmt.Errorf("%s: datasource uid %q is not a data source of this Grafana", where, uid)
			}
			src = sources[i]
		}
		if typ != src.Type {
			return grafanaDatasource{}, fmt.Errorf("%s: datasource type %q, but %q resolves to a %s data source", where, typ, uid, src.Type)
		}
		return src, nil
	}

	for name, v := range p.Vars {
		if v["type"] != "query" {
			continue
		}
		src, err := resolve("variable "+name, v["datasource"])
		if err != nil {
			return nil, err
		}
		q := v["query"]
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		expr, _ := q.(string)
		p.Targets = append(p.Targets, provisionedTarget{Panel: "variable " + name, PanelType: "variable", Expr: expr, Instant: true, Source: src})
	}

	var walk func(panels []any) error
	walk = func(panels []any) error {
		for _, pv := range panels {
			panel, _ := pv.(map[string]any)
			title, _ := panel["title"].(string)
			typ, _ := panel["type"].(string)
			if typ == "row" {
				nested, _ := panel["panels"].([]any)
				if err := walk(nested); err != nil {
					return err
				}
				continue
			}
			panelSrc, err := resolve("panel "+title, panel["datasource"])
			if err != nil {
				return err
			}
			targets, _ := panel["targets"].([]any)
			for _, tv := range targets {
				target, _ := tv.(map[string]any)
				src := panelSrc
				if ref, ok := target["datasource"]; ok {
					if src, err = resolve("panel "+title+" target "+fmt.Sprint(target["refId"]), ref); err != nil {
						return err
					}
				}
				expr, _ := target["expr"].(string)
				instant, _ := target["instant"].(bool)
				p.Targets = append(p.Targets, provisionedTarget{Panel: title, PanelType: typ, Expr: expr, Instant: instant, Source: src})
			}
		}
		return nil
	}
	panels, _ := d["panels"].([]any)
	if err := walk(panels); err != nil {
		return nil, err
	}

	// Every variable a query or a legend uses is declared or built in.
	var undeclared []string
	walkJSON(d, func(key string, v any) {
		s, ok := v.(string)
		if !ok || (key != "expr" && key != "legendFormat" && key != "query" && key != "definition") {
			return
		}
		for _, sm := range grafanaVarRef.FindAllStringSubmatch(s, -1) {
			name := sm[1] + sm[2] + sm[3]
			if _, ok := p.Vars[name]; !ok && !slices.Contains(grafanaBuiltins, name) {
				undeclared = append(undeclared, fmt.Sprintf("%s in %q", sm[0], s))
			}
		}
	})
	if len(undeclared) > 0 {
		slices.Sort(undeclared)
		return nil, fmt.Errorf("variables used but not declared: %s", strings.Join(slices.Compact(undeclared), "; "))
	}
	return p, nil
}

// pickDatasource resolves a data source variable of plugin type as
// Grafana does on load: its saved current value when that names a data
// source of the type, else the default data source when it has the type,
// else the first of the type.
func pickDatasource(plugin string, current any, sources []grafanaDatasource) (grafanaDatasource, error) {
	if plugin == "" {
		return grafanaDatasource{}, fmt.Errorf("query (the data source plugin type) is empty")
	}
	var ofType []grafanaDatasource
	for _, s := range sources {
		if s.Type == plugin {
			ofType = append(ofType, s)
		}
	}
	if len(ofType) == 0 {
		return grafanaDatasource{}, fmt.Errorf("no %s data source in this Grafana", plugin)
	}
	if c, ok := current.(map[string]any); ok {
		val, _ := c["value"].(string)
		for _, s := range ofType {
			if val != "" && (s.UID == val || s.Name == val) {
				return s, nil
			}
		}
	}
	for _, s := range ofType {
		if s.IsDefault {
			return s, nil
		}
	}
	return ofType[0], nil
}

// grafanaQuery is what Grafana sends a Prometheus data source for a panel
// query: the expression with its variables interpolated.
type grafanaQuery struct {
	// ScrapeInterval is the data source's "scrape interval" setting
	// (Grafana's default 15s); Interval is $__interval, the step the
	// time range and the panel's width give; Range is the time range.
	ScrapeInterval, Interval, Range time.Duration
	// Values are the selected values of the dashboard's variables; a
	// multi-value variable with more than one value, or "All" with an
	// allValue, is given as the regex Grafana would put in its place.
	Values map[string]string
}

// interpolate replaces the variables of expr as Grafana does before it
// sends a Prometheus query, and fails on a variable it cannot resolve.
func (q grafanaQuery) interpolate(expr string) (string, error) {
	// Grafana's $__rate_interval: at least four scrapes, and one scrape
	// more than the step, so rate() always has two samples.
	rateInterval := max(q.Interval+q.ScrapeInterval, 4*q.ScrapeInterval)
	builtins := map[string]string{
		"__rate_interval": model.Duration(rateInterval).String(),
		"__interval":      model.Duration(q.Interval).String(),
		"__interval_ms":   fmt.Sprint(q.Interval.Milliseconds()),
		"__range":         model.Duration(q.Range).String(),
		"__range_s":       fmt.Sprint(int64(q.Range.Seconds())),
		"__range_ms":      fmt.Sprint(q.Range.Milliseconds()),
	}
	var missing []string
	out := grafanaVarRef.ReplaceAllStringFunc(expr, func(ref string) string {
		sm := grafanaVarRef.FindStringSubmatch(ref)
		name := sm[1] + sm[2] + sm[3]
		if v, ok := builtins[name]; ok {
			return v
		}
		if v, ok := q.Values[name]; ok {
			return v
		}
		missing = append(missing, ref)
		return ref
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%q: no value for %s", expr, strings.Join(missing, ", "))
	}
	return out, nil
}

// promRegexEscape escapes a single variable value the way Grafana's
// Prometheus data source does inside a =~ matcher: regex metacharacters
// get a backslash, doubled because the matcher is a PromQL string.
func promRegexEscape(v string) string {
	var b strings.Builder
	for _, r := range v {
		if strings.ContainsRune(`\^$*+?.()|[]{}`, r) {
			b.WriteString(`\\`)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// testSources is a Grafana with two Prometheus data sources (the second
// the default) and a Loki, so a dashboard that hard-codes one, or picks
// the wrong type, is told apart from one that resolves its variable.
var testSources = []grafanaDatasource{
	{Name: "Prometheus staging", Type: "prometheus", UID: "prom-staging", URL: "http://staging:9090"},
	{Name: "Prometheus", Type: "prometheus", UID: "prom-main", URL: "http://main:9090", IsDefault: true},
	{Name: "Loki", Type: "loki", UID: "loki", URL: "http://loki:3100"},
}

func TestProvisionDashboard(t *testing.T) {
	// dash is a minimal dashboard around one panel datasource reference,
	// variable list and expression.
	dash := func(extraTop, vars, panelDS, expr string) string {
		return `{` + extraTop + `"uid": "u", "title": "t", "id": null,
  "templating": {"list": [` + vars + `]},
  "panels": [{"type": "row", "title": "r", "panels": []},
    {"type": "timeseries", "title": "p", "datasource": ` + panelDS + `,
     "targets": [{"refId": "A", "expr": "` + expr + `", "legendFormat": "{{instance}}"}]}]}`
	}
	const dsVar = `{"name": "datasource", "type": "datasource", "query": "prometheus"}`
	const instVar = `{"name": "instance", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "query": {"query": "label_values(up, instance)"}}`
	const viaVar = `{"type": "prometheus", "uid": "${datasource}"}`
	for _, c := range []struct {
		name    string
		json    string
		wantUID string // the data source the panel's target resolves to
		wantErr string
	}{
		{name: "variable resolves to the default prometheus",
			json: dash("", dsVar+","+instVar, viaVar, `up{instance=~\"$instance\"}`), wantUID: "prom-main"},
		{name: "the $name spelling resolves too",
			json: dash("", dsVar, `{"type": "prometheus", "uid": "$datasource"}`, `up`), wantUID: "prom-main"},
		{name: "a saved current value wins over the default",
			json: dash("", `{"name": "datasource", "type": "datasource", "query": "prometheus", "current": {"value": "prom-staging"}}`, viaVar, `up`), wantUID: "prom-staging"},
		{name: "a literal uid of this Grafana resolves",
			json: dash("", "", `{"type": "prometheus", "uid": "prom-staging"}`, `up`), wantUID: "prom-staging"},

		// Failure cases
		{name: "an import input is left unresolved",
			json: dash("", "", `{"type": "prometheus", "uid": "${DS_PROMETHEUS}"}`, `up`), wantErr: "import input"},
		{name: "__inputs is an import-only construct",
			json: dash(`"__inputs": [],`, dsVar, viaVar, `up`), wantErr: "__inputs"},
		{name: "a variable that is not declared",
			json: dash("", "", viaVar, `up`), wantErr: `"${datasource}" names no data source variable`},
		{name: "a literal uid Grafana does not have",
			json: dash("", "", `{"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}`, `up`), wantErr: "is not a data source of this Grafana"},
		{name: "a reference of another type",
			json: dash("", dsVar, `{"type": "loki", "uid": "${datasource}"}`, `up`), wantErr: `type "loki"`},
		{name: "a variable of a plugin type Grafana has none of",
			json: dash("", `{"name": "datasource", "type": "datasource", "query": "influxdb"}`, viaVar, `up`), wantErr: "no influxdb data source"},
		{name: "a datasource given as a bare name",
			json: dash("", dsVar, `"Prometheus"`, `up`), wantErr: "not an object"},
		{name: "an expression using an undeclared variable",
			json: dash("", dsVar, viaVar, `up{instance=~\"$host\"}`), wantErr: "$host"},
		{name: "a dashboard without uid",
			json: strings.Replace(dash("", dsVar, viaVar, `up`), `"uid": "u"`, `"uid": ""`, 1), wantErr: "uid is not set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := provisionDashboard([]byte(c.json), testSources)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tg := range p.Targets {
				if tg.PanelType != "variable" {
					got = append(got, tg.Source.UID)
				}
			}
			if len(got) != 1 || got[0] != c.wantUID {
				t.Errorf("panel targets resolve to %v, want [%s]", got, c.wantUID)
			}
		})
	}
}

// TestDashboardProvisions: the shipped dashboard loads by file
// provisioning (and so by import, which resolves the same variable), every
// query resolves to the Prometheus data source, and every query's
// variables interpolate.
func TestDashboardProvisions(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := provisionDashboard(raw, testSources)
	if err != nil {
		t.Fatalf("%s does not provision: %v", dashboardFile, err)
	}
	if v := p.Vars["datasource"]; v == nil || v["type"] != "datasource" || v["query"] != "prometheus" {
		t.Errorf("templating: want a variable datasource of type datasource, query prometheus; got %v", v)
	}
	q := grafanaQuery{ScrapeInterval: 15 * time.Second, Interval: 20 * time.Second, Range: 6 * time.Hour,
		Values: map[string]string{"instance": ".*", "datasource": "prom-main"}}
	n := 0
	for _, tg := range p.Targets {
		if tg.Source.UID != "prom-main" {
			t.Errorf("%s: resolves to data source %q, want the default Prometheus", tg.Panel, tg.Source.UID)
		}
		if tg.PanelType == "variable" {
			continue
		}
		n++
		if _, err := q.interpolate(tg.Expr); err != nil {
			t.Errorf("%s: %v", tg.Panel, err)
		}
	}
	if n < 10 {
		t.Errorf("found only %d panel queries: is the walk broken?", n)
	}
}

func TestGrafanaInterpolate(t *testing.T) {
	for _, c := range []struct {
		name           string
		scrape, step   time.Duration
		values         map[string]string
		expr, want     string
		wantUnresolved bool
	}{
		{name: "rate interval is four scrapes when the step is short", scrape: 15 * time.Second, step: 15 * time.Second,
			expr: `rate(x[$__rate_interval])`, want: `rate(x[1m])`},
		{name: "rate interval is step plus a scrape when the step is long", scrape: 15 * time.Second, step: 2 * time.Minute,
			expr: `rate(x[$__rate_interval])`, want: `rate(x[2m15s])`},
		{name: "every spelling of a variable", scrape: time.Second, step: time.Second, values: map[string]string{"instance": `a\\.b`},
			expr: `x{a=~"$instance",b=~"${instance}",c=~"[[instance]]",d=~"${instance:regex}"}[$__interval]`,
			want: `x{a=~"a\\.b",b=~"a\\.b",c=~"a\\.b",d=~"a\\.b"}[1s]`},
		{name: "an unknown variable", scrape: time.Second, step: time.Second,
			expr: `x{a=~"$nope"}`, wantUnresolved: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := grafanaQuery{ScrapeInterval: c.scrape, Interval: c.step, Range: time.Hour, Values: c.values}.interpolate(c.expr)
			if c.wantUnresolved {
				if err == nil {
					t.Fatalf("interpolate(%q) = %q, want an error", c.expr, got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("interpolate(%q) = %q, %v; want %q", c.expr, got, err, c.want)
			}
		})
	}
	if got := promRegexEscape("127.0.0.1:9715"); got != `127\\.0\\.0\\.1:9715` {
		t.Errorf("promRegexEscape = %q", got)
	}
}
