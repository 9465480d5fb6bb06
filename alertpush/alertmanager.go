package alertpush

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
)

// alertmanager is one Alertmanager and its sender. The producer (offer) and
// the sender (run) share its state under mu; the producer never waits for the network.
type alertmanager struct {
	// base is the URL requests go to; shown is it with the password redacted.
	base        string
	shown       string
	client      *http.Client
	resendEvery time.Duration
	host        string
	metrics     *Metrics
	log         *zap.Logger
	wake        chan struct{}

	mu sync.Mutex
	// firing is the newest state's firing alerts; pending: not yet taken.
	firing  []Alert
	pending bool
	// resolving are the resolutions not yet accepted, by key.
	resolving map[string]Alert
	// reconciled is set once the alerts held at start were read (reconcile).
	reconciled bool
	// failing keeps an outage to one log line, and its end to another.
	failing bool
}

func newAlertmanager(base string, cfg Config, m *Metrics, log *zap.Logger) *alertmanager {
	return &alertmanager{
		base: base, shown: Redacted(base), client: &http.Client{Timeout: cfg.Timeout}, resendEvery: cfg.ResendEvery, host: cfg.Host,
		metrics: m, log: log, wake: make(chan struct{}, 1), resolving: map[string]Alert{},
	}
}

// offer replaces the state to send (newest wins) and queues resolved.
func (t *alertmanager) offer(firing, resolved []Alert) {
	t.mu.Lock()
	if t.pending {
		t.metrics.drop(DropSuperseded, len(t.firing))
	}
	t.firing, t.pending = firing, true
	t.addResolving(resolved)
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// addResolving queues resolutions, minus those firing again, up to
// maxResolving. Called with mu held.
func (t *alertmanager) addResolving(resolved []Alert) {
	over := 0
	for _, a := range resolved {
		k := a.Key()
		if _, ok := t.resolving[k]; !ok && len(t.resolving) >= maxResolving {
			over++
			continue
		}
		t.resolving[k] = a
	}
	for _, a := range t.firing {
		delete(t.resolving, a.Key())
	}
	t.metrics.drop(DropOverflow, over)
}

// take is what to send now: the firing alerts, endsAt four resend intervals
// ahead, and every waiting resolution.
func (t *alertmanager) take(now time.Time) (batch []Alert, resolving map[string]Alert) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.pending && len(t.resolving) == 0 {
		return nil, nil
	}
	t.pending = false
	batch = make([]Alert, 0, len(t.firing)+len(t.resolving))
	for _, a := range t.firing {
		a.EndsAt = now.Add(4 * t.resendEvery)
		batch = append(batch, a)
	}
	resolving = make(map[string]Alert, len(t.resolving))
	for k, a := range t.resolving {
		batch = append(batch, a)
		resolving[k] = a
	}
	return batch, resolving
}

// accepted drops the resolutions taken, unless a newer one came meanwhile.
func (t *alertmanager) accepted(sent map[string]Alert) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, a := range sent {
		if cur, ok := t.resolving[k]; ok && cur.EndsAt.Equal(a.EndsAt) {
			delete(t.resolving, k)
		}
	}
}

// run sends each state offered, retrying with backoff until accepted, ctx
// ends, or a 4xx refusal (the next resend tries again).
func (t *alertmanager) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		}
		for attempt := 0; ; attempt++ {
			sent, err := t.attempt(ctx)
			if ctx.Err() != nil {
				return
			}
			if sent || err != nil {
				t.note(err)
			}
			var refused *refusedError
			if err == nil || errors.As(err, &refused) {
				break
			}
			timer := time.NewTimer(Backoff(attempt, rand.Float64))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
	}
}

// attempt reconciles once, then posts the newest state if one waits; sent
// says a request was made.
func (t *alertmanager) attempt(ctx context.Context) (sent bool, err error) {
	if err := t.reconcile(ctx); err != nil {
		return true, err
	}
	batch, resolving := t.take(time.Now())
	if len(batch) == 0 {
		return false, nil
	}
	if err := t.post(ctx, batch); err != nil {
		t.mu.Lock()
		t.pending = true // what failed is still to be sent
		t.mu.Unlock()
		return true, err
	}
	t.accepted(resolving)
	return true, nil
}

// note counts a request's result and logs an outage's start and end only.
func (t *alertmanager) note(err error) {
	t.mu.Lock()
	was := t.failing
	t.failing = err != nil
	t.mu.Unlock()
	if err == nil {
		t.metrics.push(ResultSuccess)
		if was {
			t.log.Info("alertmanager takes alerts again")
		}
		return
	}
	t.metrics.push(ResultError)
	if !was {
		t.log.Warn("pushing alerts to alertmanager failed; retrying with backoff", zap.Error(err))
	}
}

// Backoff is the wait before retry attempt+1: doubling up to backoffMax, less
// up to half at random (rnd in [0,1)) so restarted daemons do not retry in step.
func Backoff(attempt int, rnd func() float64) time.Duration {
	d := backoffMin
	for i := 0; i < attempt && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	return d - time.Duration(rnd()*float64(d)/2)
}

// refusedError is a 4xx answer: retrying the same body would not help.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// post sends alerts to POST /api/v2/alerts.
func (t *alertmanager) post(ctx context.Context, alerts []Alert) error {
	body, err := json.Marshal(alerts)
	if err != nil {
		return fmt.Errorf("encode alerts: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.base+"/api/v2/alerts", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alertmanager %s: %w", t.shown, err)
	}
	req.Header.Set("Content-Type", "application/json")
	_, err = t.do(req)
	return err
}

// reconcile, until it first succeeds, queues for resolution this host's
// active alerts that do not fire here: they cleared while no daemon pushed.
func (t *alertmanager) reconcile(ctx context.Context) error {
	t.mu.Lock()
	done := t.reconciled
	t.mu.Unlock()
	if done {
		return nil
	}
	q := url.Values{}
	q.Add("filter", "alertname="+strconv.Quote(AlertName))
	q.Add("filter", "host="+strconv.Quote(t.host))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.base+"/api/v2/alerts?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("alertmanager %s: %w", t.shown, err)
	}
	body, err := t.do(req)
	if err != nil {
		return err
	}
	var held []Alert
	if err := json.Unmarshal(body, &held); err != nil {
		return fmt.Errorf("alertmanager %s: GET /api/v2/alerts: %w", t.shown, err)
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	firing := make(map[string]bool, len(t.firing))
	for _, a := range t.firing {
		firing[a.Key()] = true
	}
	var stale []Alert
	for _, a := range held {
		if a.Labels["alertname"] != AlertName || a.Labels["host"] != t.host || firing[a.Key()] {
			continue
		}
		if !a.EndsAt.IsZero() && !a.EndsAt.After(now) {
			continue // resolved already
		}
		stale = append(stale, Alert{Labels: a.Labels, Annotations: a.Annotations, StartsAt: a.StartsAt, EndsAt: now})
	}
	t.addResolving(stale)
	t.reconciled = true
	if len(stale) > 0 {
		t.log.Info("resolving alerts that cleared while no daemon pushed them", zap.Int("alerts", len(stale)))
	}
	return nil
}

// do sends req and reads the answer; non-2xx is an error, 4xx a refusedError.
func (t *alertmanager) do(req *http.Request) ([]byte, error) {
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("alertmanager %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("alertmanager %s %s: reading the answer: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		err := fmt.Errorf("alertmanager %s %s: %s: %s", req.Method, t.shown+req.URL.Path, resp.Status, bytes.TrimSpace(body[:min(len(body), 512)]))
		if resp.StatusCode/100 == 4 {
			return nil, &refusedError{err}
		}
		return nil, err
	}
	return body, nil
}
