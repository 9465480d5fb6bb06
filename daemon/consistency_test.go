package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"watchdog/api"
	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/metrics"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
	"watchdog/wire"
)

// TestCountsAgree is issue 13's consistency test: on one database with a
// mix of entities (open and critical, open and stalled, ended in and out
// of the failure window, dismissed, snoozed, legacy), STATUS= (the counts
// it is built from), GET /api/v1/entities (what `watchdog status` prints),
// the scrape's gauges and GET /api/attention give the same numbers by
// package live's definitions; then a CLI-style write through a second
// store handle, and they agree again, the transition counted from the
// audit log.
func TestCountsAgree(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "w.db")
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	secs := func(ago time.Duration) float64 { return float64(now.Add(-ago).UnixMilli()) / 1e3 }
	stalled := `[{"code":"run.health.stalled","message":"no heartbeat","claim_status":"observed","confidence":1,"evidence":[]}]`
	dead := `[{"code":"run.health.process_dead","message":"pid gone","claim_status":"observed","confidence":1,"evidence":[]}]`
	failed := `{"code":"run.failed.exit_nonzero","message":"exit 3","claim_status":"observed","confidence":1,"evidence":[]}`
	h := testenv.SQL(t, db)
	for _, r := range []struct {
		id, health, reasons string
		lifecycle, reason   any
		terminal            int
		ended               any
	}{
		{"open-dead", "dead", dead, "running", nil, 0, nil},
		{"open-stalled", "stalled", stalled, "running", nil, 0, nil},
		{"open-snoozed", "stalled", stalled, "running", nil, 0, nil},
		{"open-fine", "running", "[]", "running", nil, 0, nil},
		{"failed-recent", "ok", "[]", "failed", failed, 1, secs(time.Hour)},
		{"failed-dismissed", "ok", "[]", "failed", failed, 1, secs(2 * time.Hour)},
		{"failed-old", "ok", "[]", "failed", failed, 1, secs(30 * 24 * time.Hour)},
		{"done-recent", "ok", "[]", "completed", nil, 1, secs(time.Hour)},
		{"legacy", "unknown", "[]", nil, nil, 0, nil},
	} {
		if _, err := h.Exec(`INSERT INTO entities (type, id, lifecycle, terminal, health, delivery, reasons, transition_reason,
			ended_at, lifecycle_at, created_at, updated_at) VALUES ('session', ?, ?, ?, ?, 'not_expected', ?, ?, ?, ?, ?, ?)`,
			r.id, r.lifecycle, r.terminal, r.health, r.reasons, r.reason, r.ended, secs(40*24*time.Hour), secs(40*24*time.Hour), secs(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []store.Dismissal{
		{Fingerprint: "session:failed-dismissed:run.failed.exit_nonzero", EntityType: "session", EntityID: "failed-dismissed",
			ReasonCode: "run.failed.exit_nonzero", StatusAtDismissal: "failed", DismissedAt: now, ClearOnStatusChange: true},
		{Fingerprint: "session:open-snoozed:run.health.stalled", EntityType: "session", EntityID: "open-snoozed",
			ReasonCode: "run.health.stalled", StatusAtDismissal: "running", SnoozedUntil: now.Add(time.Hour), DismissedAt: now, ClearOnStatusChange: true},
	} {
		if err := st.UpsertDismissal(ctx, d); err != nil {
			t.Fatal(err)
		}
	}

	clock := func() time.Time { return now }
	view := live.New(st, clock, 0)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, view, "test", clock, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Follow(view)
	if err := view.Load(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Options{Store: st, Writer: &transitions.Writer{Store: st, Now: clock, Observer: m},
		Gatherer: m.Gatherer(reg), Now: clock, Metrics: m, View: view}))
	defer srv.Close()

	compare := func(stage string, want live.Counts) {
		t.Helper()
		if err := view.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		c := view.Counts(now)
		if line := StatusLine(c); !strings.HasPrefix(line, fmt.Sprintf("%d open entities: %d critical", want.Open, want.OpenBySeverity[state.SeverityCritical])) {
			t.Errorf("%s: STATUS=%s, want %d open, %d critical", stage, line, want.Open, want.OpenBySeverity[state.SeverityCritical])
		}
		if c.Open != want.Open || c.InWindow != want.InWindow || c.Queue != want.Queue || fmt.Sprint(c.QueueBySeverity) != fmt.Sprint(want.QueueBySeverity) {
			t.Errorf("%s: counts %+v, want %+v", stage, c, want)
		}

		// `watchdog status` against the daemon: the list.
		var list wire.EntityList
		getJSON(t, srv.URL+"/api/v1/entities?limit=500", &list)
		open, openSev, inWindow := 0, map[state.Severity]int{}, 0
		for _, e := range list.Items {
			if e.Lifecycle == nil {
				continue
			}
			g, _ := transitions.Lookup(e.Type)
			if !g.IsTerminal(*e.Lifecycle) {
				open++
				openSev[e.State.Severity]++
			}
			if e.State.Outcome != "" && !attention.AgedOut(e.State.Outcome, e.State.Health, e.EndedAt.Time, time.Time{}, e.UpdatedAt.Time, now, 0) {
				inWindow++
			}
		}
		if open != c.Open || openSev[state.SeverityCritical] != c.OpenBySeverity[state.SeverityCritical] || inWindow != c.InWindow {
			t.Errorf("%s: the list has %d open (%d critical), %d in the window; STATUS= %d (%d), %d", stage,
				open, openSev[state.SeverityCritical], inWindow, c.Open, c.OpenBySeverity[state.SeverityCritical], c.InWindow)
		}

		// The queue.
		var q attention.Queue
		getJSON(t, srv.URL+"/api/attention?limit=500", &q)
		if q.Total != c.Queue || fmt.Sprint(q.BySeverity) != fmt.Sprint(c.QueueBySeverity) {
			t.Errorf("%s: GET /api/attention total %d %v, STATUS= %d %v", stage, q.Total, q.BySeverity, c.Queue, c.QueueBySeverity)
		}

		// The scrape.
		mfs, err := m.Gatherer(reg).Gather()
		if err != nil {
			t.Fatal(err)
		}
		// watchdog_attention_items summed over the entity types is the
		// queue by severity; by type it is the queue's items by type.
		gaugeOpen, gaugeQueue, gaugeByType := 0, map[state.Severity]int{}, map[string]int{}
		for _, mf := range mfs {
			for _, mm := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range mm.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				switch mf.GetName() {
				case "watchdog_entity_states":
					if g, err := transitions.Lookup(labels["entity_type"]); err == nil && !g.IsTerminal(labels["lifecycle"]) {
						gaugeOpen += int(mm.GetGauge().GetValue())
					}
				case "watchdog_attention_items":
					n := int(mm.GetGauge().GetValue())
					gaugeQueue[state.Severity(labels["severity"])] += n
					if n > 0 {
						gaugeByType[labels["entity_type"]+"/"+labels["severity"]] += n
					}
				}
			}
		}
		if gaugeOpen != c.Open || fmt.Sprint(gaugeQueue) != fmt.Sprint(c.QueueBySeverity) {
			t.Errorf("%s: the gauges count %d open and queue %v; STATUS= %d and %v", stage, gaugeOpen, gaugeQueue, c.Open, c.QueueBySeverity)
		}
		queueByType := map[string]int{}
		for _, it := range q.Items {
			queueByType[it.Entity.Type+"/"+string(it.Severity)]++
		}
		if fmt.Sprint(gaugeByType) != fmt.Sprint(queueByType) {
			t.Errorf("%s: watchdog_attention_items by type %v, the queue's items by type %v", stage, gaugeByType, queueByType)
		}
	}

	// Open: 4, two of them critical. In the window: failed-recent,
	// failed-dismissed, done-recent. Queue: two critical items (of
	// open-snoozed and failed-dismissed, hidden, and failed-old, aged out,
	// none shows).
	compare("seeded", live.Counts{Open: 4, OpenBySeverity: map[state.Severity]int{state.SeverityCritical: 2}, InWindow: 3, Queue: 2,
		QueueBySeverity: map[state.Severity]int{state.SeverityCritical: 2, state.SeverityWarning: 0, state.SeverityInfo: 0}})

	// A CLI with --db: another store handle on the file ends the fine
	// session failed.
	cli, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	w := &transitions.Writer{Store: cli, Now: clock}
	if _, err := w.Transition(ctx, transitions.Request{Type: "session", ID: "open-fine", To: "failed", Actor: transitions.ActorOrchestrator,
		Reason: &state.StateReason{Code: state.RunFailedExitNonzero, Message: "exit 3"}}); err != nil {
		t.Fatal(err)
	}
	compare("after a CLI write", live.Counts{Open: 3, OpenBySeverity: map[state.Severity]int{state.SeverityCritical: 2}, InWindow: 4, Queue: 3,
		QueueBySeverity: map[state.Severity]int{state.SeverityCritical: 3, state.SeverityWarning: 0, state.SeverityInfo: 0}})

	// The CLI's transition counts, from the audit log.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `watchdog_transitions_total{actor="orchestrator",entity_type="session",from="running",to="failed"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("the CLI's transition is not counted: want %s", want)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
