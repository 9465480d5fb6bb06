package alertpush

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func item(typ, id, label string, sev state.Severity, code state.ReasonCode, summary string, ev ...state.EvidenceRef) attention.Item {
	return attention.Item{
		Severity: sev, Entity: attention.Entity{Type: typ, ID: id, Label: label},
		Reason:      attention.Reason{Code: code, Summary: summary, EvidenceRefs: ev},
		FirstSeenAt: unixtime.Of(t0),
	}
}

func TestAlertOf(t *testing.T) {
	dead := item("session", "s-42", "reviewer for PR 1064", state.SeverityCritical, "run.health.process_dead", "Process dead",
		state.EvidenceRef{Kind: "pid", Detail: "pid 4242 is gone"}, state.EvidenceRef{Kind: "proc"})
	tests := []struct {
		name    string
		it      attention.Item
		entity  store.Entity
		display string
		runbook string
		labels  map[string]string
		ann     map[string]string
	}{
		{
			name: "a host-less entity takes this daemon's host; evidence in the description; runbook anchored at the code",
			it:   dead, display: "Running · Process dead", runbook: "https://wiki.example.org/reasons",
			labels: map[string]string{"alertname": "WatchdogEntity", "entity_type": "session", "entity_id": "s-42",
				"reason_code": "run.health.process_dead", "severity": "critical", "host": "this-host"},
			ann: map[string]string{
				"summary":     "session/s-42 (reviewer for PR 1064): Running · Process dead",
				"description": "Process dead (evidence: pid 4242 is gone)",
				"runbook_url": "https://wiki.example.org/reasons#run.health.process_dead",
			},
		},
		{
			name:   "the entity's own host wins; no runbook_url when none is configured; a label that is type/id is not repeated",
			it:     item("play", "p1", "play/p1", state.SeverityWarning, "play.stalled", "Heartbeat stale, 3m ago"),
			entity: store.Entity{HostID: "other-host"}, display: "Running · Stalled",
			labels: map[string]string{"alertname": "WatchdogEntity", "entity_type": "play", "entity_id": "p1",
				"reason_code": "play.stalled", "severity": "warning", "host": "other-host"},
			ann: map[string]string{"summary": "play/p1: Running · Stalled", "description": "Heartbeat stale, 3m ago"},
		},
		{
			// Failure case: a code the runbook has no section for (one
			// this version does not register) gets no link to an anchor
			// that is not there: the page's and the API's rule (docs.For).
			name:    "no runbook_url for a code without a runbook section",
			it:      item("session", "s-7", "", state.SeverityCritical, "session.process.dead", "Process dead"),
			display: "Running · Process dead", runbook: "https://wiki.example.org/reasons",
			labels: map[string]string{"alertname": "WatchdogEntity", "entity_type": "session", "entity_id": "s-7",
				"reason_code": "session.process.dead", "severity": "critical", "host": "this-host"},
			ann: map[string]string{"summary": "session/s-7: Running · Process dead", "description": "Process dead"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := live.Entry{Entity: tt.entity, Derived: live.Derived{Display: tt.display}}
			a := AlertOf(tt.it, e, "this-host", tt.runbook)
			if !mapsEqual(a.Labels, tt.labels) {
				t.Errorf("labels = %v, want %v", a.Labels, tt.labels)
			}
			if !mapsEqual(a.Annotations, tt.ann) {
				t.Errorf("annotations = %v, want %v", a.Annotations, tt.ann)
			}
			if !a.StartsAt.Equal(t0) || !a.EndsAt.IsZero() {
				t.Errorf("startsAt %v endsAt %v, want first seen %v and no end", a.StartsAt, a.EndsAt, t0)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{0, 0, backoffMin},
		{1, 0, 2 * backoffMin},
		{3, 0, 8 * backoffMin},
		{1, 0.5, 2*backoffMin - backoffMin/2},
		{100, 0, backoffMax},
		{100, 0.999999, backoffMax/2 + 1},
	}
	for _, tt := range tests {
		got := Backoff(tt.attempt, func() float64 { return tt.rnd })
		// The last case rounds; jitter takes up to half, never more.
		if tt.rnd > 0.9 {
			if got < backoffMax/2 || got > backoffMax {
				t.Errorf("Backoff(%d, %v) = %v, want within [%v, %v]", tt.attempt, tt.rnd, got, backoffMax/2, backoffMax)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", tt.attempt, tt.rnd, got, tt.want)
		}
	}
}

// stub is an Alertmanager stand-in on 127.0.0.1: it records each POST's
// alerts, answers each with the next status of script (then 200), holds
// each POST until gate (when set) is closed, and answers GETs with held.
type stub struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  [][]Alert
	script []int
	held   []Alert // GET /api/v2/alerts answers these
	gate   chan struct{}
}

func newStub(t *testing.T) *stub {
	s := &stub{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		gate := s.gate
		s.mu.Unlock()
		if gate != nil && r.Method == http.MethodPost {
			<-gate
		}
		if r.Method == http.MethodGet {
			s.mu.Lock()
			defer s.mu.Unlock()
			json.NewEncoder(w).Encode(s.held) //nolint:errcheck // a test server
			return
		}
		body, _ := io.ReadAll(r.Body)
		var alerts []Alert
		if err := json.Unmarshal(body, &alerts); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.posts = append(s.posts, alerts)
		status := http.StatusOK
		if len(s.script) > 0 {
			status, s.script = s.script[0], s.script[1:]
		}
		s.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stub) allPosts() [][]Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]Alert(nil), s.posts...)
}

func alertNamed(id string) Alert {
	return Alert{Labels: map[string]string{"alertname": AlertName, "entity_id": id, "host": "h"}, StartsAt: t0}
}

func shortBackoff(t *testing.T) {
	old, oldMax := backoffMin, backoffMax
	backoffMin, backoffMax = 10*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { backoffMin, backoffMax = old, oldMax })
}

// TestAlertmanagerNewestStateWins: while a request hangs, newer states replace
// each other (counted as dropped); the sender then sends only the newest.
func TestAlertmanagerNewestStateWins(t *testing.T) {
	s := newStub(t)
	gate := make(chan struct{})
	s.gate = gate
	var open sync.Once
	defer open.Do(func() { close(gate) }) // a failed test must not leave the server's handler blocked
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	tg := newAlertmanager(s.srv.URL, Config{ResendEvery: time.Minute, Timeout: time.Minute, Host: "h"}, m, nil)
	tg.log = zapNop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { tg.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	tg.offer([]Alert{alertNamed("a")}, nil)
	// The sender took the first state once it is no longer pending.
	eventually(t, s, func() bool {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		return !tg.pending
	}, "the sender never took the first state")
	tg.offer([]Alert{alertNamed("b")}, nil)
	tg.offer([]Alert{alertNamed("c"), alertNamed("d")}, nil)
	tg.offer([]Alert{alertNamed("e")}, []Alert{{Labels: alertNamed("a").Labels, EndsAt: t0}})
	if got := testutil.ToFloat64(m.dropped.WithLabelValues(DropSuperseded)); got != 3 {
		t.Errorf("dropped superseded = %v, want 3 (b, c and d never sent)", got)
	}
	open.Do(func() { close(gate) })
	eventually(t, s, func() bool { return len(s.allPosts()) >= 2 }, "the newest state was never sent")
	posts := s.allPosts()
	last := posts[len(posts)-1]
	ids := map[string]bool{}
	for _, a := range last {
		ids[a.Labels["entity_id"]] = true
		if a.Labels["entity_id"] == "e" && !a.EndsAt.After(time.Now()) {
			t.Errorf("firing alert e ends at %v, want in the future", a.EndsAt)
		}
		if a.Labels["entity_id"] == "a" && !a.EndsAt.Equal(t0) {
			t.Errorf("resolved alert a ends at %v, want %v", a.EndsAt, t0)
		}
	}
	if len(posts) != 2 || len(last) != 2 || !ids["e"] || !ids["a"] {
		t.Errorf("posts = %v, want the first state, then e firing and a resolved", posts)
	}
	eventually(t, s, func() bool {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		return len(tg.resolving) == 0
	}, "the accepted resolution stayed queued")
}

// TestAlertmanagerRetriesUntilAccepted: a failing Alertmanager is retried with
// backoff, each failure counted, until it takes the resolution; a 4xx is
// not retried.
func TestAlertmanagerRetriesUntilAccepted(t *testing.T) {
	shortBackoff(t)
	tests := []struct {
		name          string
		script        []int
		posts, errors int
	}{
		{"two 503s, then accepted", []int{503, 503}, 3, 2},
		{"a 400 is not retried", []int{400}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStub(t)
			s.script = tt.script
			m, err := NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			tg := newAlertmanager(s.srv.URL, Config{ResendEvery: time.Minute, Timeout: time.Minute, Host: "h"}, m, zapNop())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { tg.run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			tg.offer(nil, []Alert{{Labels: alertNamed("gone").Labels, StartsAt: t0, EndsAt: t0}})
			want := float64(tt.posts - tt.errors)
			eventually(t, s, func() bool {
				return testutil.ToFloat64(m.pushes.WithLabelValues(ResultError)) == float64(tt.errors) &&
					testutil.ToFloat64(m.pushes.WithLabelValues(ResultSuccess)) == want
			}, "the pushes were not counted as expected")
			if got := len(s.allPosts()); got != tt.posts {
				t.Errorf("%d posts, want %d", got, tt.posts)
			}
		})
	}
}

// fakeSource is a queue the test sets: the live view's two reads.
type fakeSource struct {
	mu    sync.Mutex
	items []attention.Item
}

func (f *fakeSource) set(items ...attention.Item) {
	f.mu.Lock()
	f.items = items
	f.mu.Unlock()
}

func (f *fakeSource) Attention(q attention.Query, now time.Time) attention.Queue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return attention.Queue{Total: len(f.items), Items: append([]attention.Item(nil), f.items...)}
}

func (f *fakeSource) Get(typ, id string, now time.Time) (live.Entry, bool) {
	return live.Entry{Entity: store.Entity{Type: typ, ID: id}, Derived: live.Derived{Display: "Running · Process dead"}}, true
}

// TestPusherResolvesWhatLeftAndWhatClearedWhileDown: at start the pusher
// resolves this host's alerts that Alertmanager holds and the queue does
// not (another host's stay), fires the queue's, and resolves an item as
// soon as it leaves the queue.
func TestPusherResolvesWhatLeftAndWhatClearedWhileDown(t *testing.T) {
	s := newStub(t)
	stale := AlertOf(item("session", "old", "", state.SeverityCritical, "session.process.dead", "Process dead"), live.Entry{}, "h", "")
	foreign := AlertOf(item("session", "theirs", "", state.SeverityCritical, "session.process.dead", "Process dead"), live.Entry{}, "elsewhere", "")
	s.held = []Alert{stale, foreign}
	src := &fakeSource{}
	keep := item("session", "s-1", "", state.SeverityCritical, "session.process.dead", "Process dead")
	info := item("session", "s-2", "", state.SeverityInfo, "session.idle", "Idle")
	src.set(keep, info)
	p := New(Config{URLs: []string{s.srv.URL + "/"}, ResendEvery: time.Hour, Host: "h"}, src, nil, zapNop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	sent := func(id string, firing bool) func() bool {
		return func() bool {
			for _, post := range s.allPosts() {
				for _, a := range post {
					if a.Labels["entity_id"] == id && a.EndsAt.After(time.Now()) == firing {
						return true
					}
				}
			}
			return false
		}
	}
	eventually(t, s, sent("s-1", true), "the queue's critical item never fired")
	eventually(t, s, sent("old", false), "the alert that cleared while down was not resolved")
	src.set()
	p.Kick()
	eventually(t, s, sent("s-1", false), "the item that left the queue was not resolved")
	for _, post := range s.allPosts() {
		for _, a := range post {
			if id := a.Labels["entity_id"]; id == "theirs" || id == "s-2" {
				t.Errorf("sent %s: another host's alert or an info item", id)
			}
		}
	}
}

func zapNop() *zap.Logger { return zap.NewNop() }

// eventually waits for cond, generously: a slow machine only makes it
// slower. Given up, it reports what the stub had received.
func eventually(t *testing.T, s *stub, cond func() bool, what string) {
	t.Helper()
	testenv.Eventually(t, what, 2*time.Minute, func() (bool, string) {
		if cond() {
			return true, ""
		}
		posts := s.allPosts()
		if len(posts) == 0 {
			return false, "no post received"
		}
		return false, fmt.Sprintf("%d posts received, the last %+v", len(posts), posts[len(posts)-1])
	})
}

func TestRedacted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:9093", "http://127.0.0.1:9093"},
		{"https://watchdog:s3cret@am.example.org/", "https://watchdog:xxxxx@am.example.org/"},
		{"https://token@am.example.org", "https://token@am.example.org"},
	}
	for _, tt := range tests {
		if got := Redacted(tt.in); got != tt.want {
			t.Errorf("Redacted(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
