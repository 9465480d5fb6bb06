package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"watchdog/live"
	"watchdog/metrics"
	"watchdog/state"
	"watchdog/wire"
)

// TestEvictedReadsAgree: a daemon whose view dropped the ended entities
// that aged out of the failure window (ADR-0060) answers every read as a
// daemon that kept them: each entity's GET, the list under every filter
// and order walked page by page across the window's boundary, the queue
// and the gauges.
func TestEvictedReadsAgree(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	type ref struct{ typ, id string }
	var all []ref
	add := func(i int) {
		typ := []string{"session", "invocation"}[i%2]
		id := fmt.Sprintf("e-%03d", i)
		all = append(all, ref{typ, id})
		if i%17 == 0 {
			e.registerLegacy(typ, id)
			return
		}
		e.register(typ, id, "running")
		e.clock.Advance(time.Second)
		switch i % 5 {
		case 1:
			e.move(typ, id, "failed", state.RunFailedExitNonzero)
		case 3:
			e.move(typ, id, map[string]string{"session": "completed", "invocation": "succeeded"}[typ], "")
		case 2:
			e.observe(typ, id, state.HealthStalled, state.DeliveryNotExpected, state.RunHealthStalled)
		}
	}
	for i := range 90 {
		add(i)
	}
	e.clock.Advance(25 * time.Hour)
	for i := 90; i < 140; i++ {
		add(i)
	}
	serve := func(evict bool) (string, *live.View) {
		v := live.New(e.st, e.clock.Now, 0)
		if evict {
			v.EvictAgedOut()
		}
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg, v, "test", e.clock.Now, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m.Follow(v)
		if err := v.Load(ctx); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(New(Options{Store: e.st, Writer: e.w, Gatherer: m.Gatherer(reg), Now: e.clock.Now, Metrics: m, View: v}))
		t.Cleanup(srv.Close)
		return srv.URL, v
	}
	keptURL, kept := serve(false)
	droppedURL, dropped := serve(true)
	if dropped.Len() >= kept.Len()-20 {
		t.Fatalf("the view that drops holds %d of %d entities: too few dropped to tell", dropped.Len(), kept.Len())
	}
	get := func(base, path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	same := func(path string) string {
		t.Helper()
		w, g := get(keptURL, path), get(droppedURL, path)
		if g != w {
			t.Fatalf("GET %s: the view that drops answers\n%s\nthe one that keeps\n%s", path, g, w)
		}
		return w
	}
	for _, r := range all {
		same("/api/v1/entities/" + r.typ + "/" + r.id)
	}
	same("/api/v1/entities/session/nope")
	for _, q := range []string{"", "type=session", "severity=critical,warning", "severity=ok", "severity=neutral", "order=id", "type=invocation&order=id", "host=h9"} {
		seen := 0
		path := "/api/v1/entities?limit=7&" + q
		for pages := 0; ; pages++ {
			body := same(path)
			var l wire.EntityList
			if err := json.Unmarshal([]byte(strings.SplitN(body, " ", 2)[1]), &l); err != nil {
				t.Fatal(err)
			}
			seen += len(l.Items)
			if l.Next == "" {
				break
			}
			path = "/api/v1/entities?limit=7&" + q + "&after=" + url.QueryEscape(l.Next)
			if pages > 50 {
				t.Fatalf("%s: the walk does not end", q)
			}
		}
		if q == "" && seen != len(all) {
			t.Errorf("the list walked %d entities of %d", seen, len(all))
		}
	}
	same("/api/attention")
	same("/api/attention?include_dismissed=true&limit=500")
	gauges := func(base string) []string {
		var out []string
		for _, l := range strings.Split(get(base, "/metrics"), "\n") {
			if strings.HasPrefix(l, "watchdog_") && !strings.HasPrefix(l, "watchdog_scrape_collector_duration") {
				out = append(out, l)
			}
		}
		slices.Sort(out)
		return out
	}
	if w, g := gauges(keptURL), gauges(droppedURL); !slices.Equal(w, g) || len(w) < 10 {
		t.Errorf("the gauges differ:\n%s\n----\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if kc, dc := kept.Counts(e.clock.Now()), dropped.Counts(e.clock.Now()); fmt.Sprint(kc) != fmt.Sprint(dc) {
		t.Errorf("counts %+v, the view that keeps %+v", dc, kc)
	}
}
