package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/metrics"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
)

// env is a real daemon front end: a SQLite store in a temp dir, the write
// path, metrics on their own registry, and the handler on httptest.
type env struct {
	t     testing.TB
	st    *sqlite.Store
	w     *transitions.Writer
	clock *testenv.Clock // shared by the write path, the API and metrics
	reg   prometheus.Gatherer
	m     *metrics.Metrics
	srv   *httptest.Server
	logs  *observer.ObservedLogs
	token string
	h     *Handler // for what a reload sets (SetRunbookURL)
}

type envOption func(*Options)

// TestMain gives the drivers the view's derivation, as the daemon does
// before it opens a store: the tests' writes leave fresh columns.
func TestMain(m *testing.M) {
	store.SetDerivation(live.Columns)
	os.Exit(m.Run())
}

// withToken turns auth on with one admin token (auth.token_file's).
func withToken(tok string) envOption {
	return func(o *Options) {
		o.Tokens = NewTokens([]Token{{Name: "admin", Secret: tok, Scopes: ScopeAdmin}})
	}
}
func withReady(f func() error) envOption   { return func(o *Options) { o.Ready = f } }
func withWindow(d time.Duration) envOption { return func(o *Options) { o.FailureWindow = d } }
func withoutGatherer() envOption           { return func(o *Options) { o.Gatherer = nil } }
func withAllowedHosts(h ...string) envOption {
	return func(o *Options) { o.AllowedHosts = h }
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "watchdog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := testenv.NewClock(time.Date(2026, 5, 24, 12, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	// One live view for the API and the metrics, loaded and followed by
	// the counters as the daemon does (daemon/view.go).
	view := live.New(st, c.Now, 0)
	m, err := metrics.New(reg, view, "test", c.Now, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Follow(view)
	if err := view.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := &transitions.Writer{Store: st, Now: c.Now, Observer: m}
	core, logs := observer.New(zapcore.DebugLevel)
	o := Options{Store: st, Writer: w, Log: zap.New(core), Gatherer: m.Gatherer(reg), Now: c.Now, Metrics: m, View: view}
	for _, f := range opts {
		f(&o)
	}
	token := ""
	if ts := o.Tokens.list(); len(ts) > 0 {
		token = ts[0].Secret
	}
	h := New(o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, st: st, w: w, clock: c, reg: m.Gatherer(reg), m: m, srv: srv, logs: logs, token: token, h: h}
}

// seconds is the clock's time as Unix seconds, to the millisecond.
func (e *env) seconds() float64 { return float64(e.clock.Now().UnixMilli()) / 1e3 }

// response is one HTTP exchange's outcome.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorBody(t testing.TB) Error {
	t.Helper()
	var e Error
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, r.body)
	}
	if e.Error == "" || e.Cause == "" || strings.Contains(e.Error, "\n") {
		t.Fatalf("error body needs one sentence and a cause: %s", r.body)
	}
	return e
}

// do sends a request with the env's token (if any) and, on a POST,
// Content-Type: application/json, unless hdr overrides them (an empty
// value removes the header).
func (e *env) do(method, path, body string, hdr ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" { // Go sends req.Host, not a Host header
			req.Host = hdr[i+1]
			continue
		}
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *env) decode(r response, v any) {
	e.t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		e.t.Fatalf("decode %s: %v", r.body, err)
	}
}

// register creates an entity through the write path (not the API, so API
// tests of registration start from a known store).
func (e *env) register(typ, id, lifecycle string) {
	e.t.Helper()
	ent := store.Entity{Type: typ, ID: id, Label: "label of " + id}
	if lifecycle != "" {
		ent.Lifecycle = &lifecycle
	}
	if _, err := e.w.Register(context.Background(), transitions.Registration{Entity: ent, Actor: transitions.ActorOrchestrator}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) registerLegacy(typ, id string) {
	e.t.Helper()
	if _, err := e.w.Register(context.Background(), transitions.Registration{Entity: store.Entity{Type: typ, ID: id}, Legacy: true, Actor: transitions.ActorOrchestrator}); err != nil {
		e.t.Fatal(err)
	}
}

// move applies a transition through the write path.
func (e *env) move(typ, id, to string, code state.ReasonCode) {
	e.t.Helper()
	req := transitions.Request{Type: typ, ID: id, To: to, Actor: transitions.ActorOrchestrator, Timeout: 60 * time.Second}
	if typ == "agent" {
		req.Trigger = "reconciliation" // agents record why
	}
	if code != "" {
		req.Reason = &state.StateReason{Code: code, Message: "moved to " + to}
	}
	if _, err := e.w.Transition(context.Background(), req); err != nil {
		e.t.Fatal(err)
	}
}

// observe writes probe findings as the sweep would.
func (e *env) observe(typ, id string, h state.Health, d state.Delivery, codes ...state.ReasonCode) {
	e.t.Helper()
	ctx := context.Background()
	cur, err := e.st.Get(ctx, typ, id)
	if err != nil {
		e.t.Fatal(err)
	}
	reasons := make([]state.StateReason, 0, len(codes))
	for _, c := range codes {
		reasons = append(reasons, state.Observed(c, "found "+string(c), state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: "seen by the test"}))
	}
	now := e.seconds()
	if _, err := e.st.RecordObservation(ctx, typ, id, store.Observation{
		Health: h, Delivery: d, Reasons: reasons, HealthSince: unixAt(now), SeenSeq: cur.LastSeq, At: unixAt(now),
	}); err != nil {
		e.t.Fatal(err)
	}
}

// snapshot is everything a rejected request must leave alone.
type snapshot struct {
	entities   []store.Entity
	audit      map[string][]store.AuditRow
	dismissals map[string]store.Dismissal
	triage     []store.TriageEntry
}

func (e *env) snapshot() snapshot {
	e.t.Helper()
	ctx := context.Background()
	list, err := e.st.List(ctx, store.Filter{})
	if err != nil {
		e.t.Fatal(err)
	}
	s := snapshot{entities: list, audit: map[string][]store.AuditRow{}}
	for _, ent := range list {
		rows, err := e.st.Transitions(ctx, ent.Type, ent.ID)
		if err != nil {
			e.t.Fatal(err)
		}
		s.audit[ent.Type+"/"+ent.ID] = rows
	}
	if s.dismissals, err = e.st.Dismissals(ctx); err != nil {
		e.t.Fatal(err)
	}
	if s.triage, err = e.st.TriageLog(ctx, 0, 1<<20); err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) assertUnchanged(before snapshot, what string) {
	e.t.Helper()
	after := e.snapshot()
	if !reflect.DeepEqual(before, after) {
		e.t.Errorf("%s changed the store:\nbefore %+v\nafter  %+v", what, before, after)
	}
}

// metric reads one series' value from the env's registry (0 when absent).
func (e *env) metric(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if want[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// gaugeSum sums the gauge series of name whose labels include labels
// (name, value pairs): watchdog_attention_items by severity, over its
// entity types.
func (e *env) gaugeSum(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue series
				}
			}
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// newEnvWithStore serves a second handler over base's write path and
// clock, reading and writing through s (a wrapper of base's store).
func newEnvWithStore(t testing.TB, base *env, s Store) *env {
	t.Helper()
	srv := httptest.NewServer(New(Options{Store: s, Writer: base.w, Now: base.clock.Now}))
	t.Cleanup(srv.Close)
	c := *base
	c.srv = srv
	c.t = t
	return &c
}
