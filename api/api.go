// Package api is watchdog's HTTP interface on net/http ServeMux patterns:
// routes, statuses and error causes are docs/reference/http-api.md, who may
// do what docs/security.md (ADR-0007, ADR-0011, ADR-0062). Every error is a
// JSON Error with a closed-vocabulary cause; a rejected request changes nothing.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"watchdog/attention"
	"watchdog/docs"
	"watchdog/live"
	"watchdog/metrics"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// Store is what the API reads and writes besides the write path.
type Store interface {
	Get(ctx context.Context, typ, id string) (store.Entity, error)
	List(ctx context.Context, f store.Filter) ([]store.Entity, error)
	LatestTransitions(ctx context.Context, typ, id string, n int) ([]store.AuditRow, int, error)
	TransitionsAfter(ctx context.Context, typ, id string, after int64, limit int) ([]store.AuditRow, error)
	RecordHeartbeat(ctx context.Context, typ, id string, at time.Time, progress string) error
	AttentionCandidates(ctx context.Context, since time.Time) ([]store.Entity, error)
	Dismissals(ctx context.Context) (map[string]store.Dismissal, error)
	UpsertDismissal(ctx context.Context, d store.Dismissal) error
	UpsertDismissals(ctx context.Context, ds []store.Dismissal) (string, error)
	TriageLogBefore(ctx context.Context, before int64, limit int) ([]store.TriageEntry, error)
	HostNames(ctx context.Context) (map[string]string, error)
}

// LiveReader is what the reads answer from: the live view; *live.View is one.
type LiveReader interface {
	Sync(ctx context.Context) error
	Get(typ, id string, now time.Time) (live.Entry, bool)
	Each(typ string, fn func(*live.Entry))
	Attention(q attention.Query, now time.Time) attention.Queue
}

// fleetReader is a LiveReader that may not hold every entity and reads the
// rest from the store (ADR-0056, ADR-0060); *live.View is one.
type fleetReader interface {
	Complete(host string, all bool) bool
	For(ctx context.Context, host string, all bool) (*live.View, error)
	ForQueue(ctx context.Context, host string, all bool, now time.Time) (*live.View, error)
	ListPage(ctx context.Context, host string, all bool, q store.ListQuery, now time.Time) (live.ListResult, bool, error)
}

// Options configure the handler. Store and Writer are required.
type Options struct {
	Store  Store
	Writer *transitions.Writer
	// Log receives the access log (debug) and store failures; nil discards.
	Log *zap.Logger
	// Tokens are the accepted bearer tokens; nil is auth: none, loopback
	// only. The local socket (PeerContext) needs none: the kernel names the uid.
	Tokens *Tokens
	// Login answers a page request without credentials; nil answers 401 in JSON.
	Login http.Handler
	// PublicReads opens the reads to callers with no credentials.
	PublicReads bool
	// AllowedHosts are the Host names allowed besides IP addresses and localhost.
	AllowedHosts []string
	// Gatherer is served at /metrics; nil leaves /metrics out.
	Gatherer prometheus.Gatherer
	// Ready is /readyz: nil means always ready.
	Ready func() error
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// FailureWindow is how long ended failures stay queued; 0 means 24h.
	FailureWindow time.Duration
	// View is what the reads answer from; nil keeps a view of Store (a live.Source).
	View LiveReader
	// Metrics counts the transitions refused before the write path.
	Metrics *metrics.Metrics
	// Page is the operator's page, served at PagePatterns behind the Host guard.
	Page http.Handler
	// Heartbeats finds the heartbeat an entity read shows; nil shows the posted one.
	Heartbeats *wire.Heartbeats
	// Processes reads an open entity's process facts (ADR-0048); nil shows none.
	Processes *wire.Processes
	// RunbookURL is the base of runbook_url; "" links the daemon's own /runbook.
	RunbookURL string
}

// PagePatterns are the routes the operator's page answers.
var PagePatterns = []string{"GET /{$}", "GET /entities/{type}/{id}", "GET /runbook", "GET /events", "GET /assets/"}

type server struct {
	Options
	sessions sessions
	mux      *http.ServeMux
	window   atomic.Int64           // the failure window in nanoseconds; reloadable
	runbook  atomic.Pointer[string] // the runbook's base; reloadable
	hosts    hostNameCache
	patterns []string    // every route New registered
	fleet    fleetReader // View, when it reads beyond what it holds
}

// Patterns are the routes of the API's router (with /metrics and the
// page's): what docs/reference/openapi.json must name, no more, no less.
func Patterns() []string {
	h := New(Options{Gatherer: prometheus.NewRegistry(), Page: http.NotFoundHandler()})
	return slices.Clone(h.s.patterns)
}

// openapi is GET /api/openapi.json, open to every caller: a contract is no secret.
func (s *server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(docs.OpenAPI)
}

// Handler is the API.
type Handler struct {
	s    *server
	next http.Handler
}

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.next.ServeHTTP(w, r) }

// SetFailureWindow applies a new failure window (0 means 24h) to the queue
// and to the metrics' attention gauge.
func (h *Handler) SetFailureWindow(d time.Duration) {
	if d <= 0 {
		d = attention.DefaultFailureWindow
	}
	h.s.window.Store(int64(d))
	if h.s.Metrics != nil {
		h.s.Metrics.SetFailureWindow(d)
	}
}

func (s *server) failureWindow() time.Duration { return time.Duration(s.window.Load()) }

// SetRunbookURL makes the runbook links point at base ("" for /runbook).
func (h *Handler) SetRunbookURL(base string) { h.s.runbook.Store(&base) }

// New builds the HTTP handler.
func New(o Options) *Handler {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.View == nil {
		if src, ok := o.Store.(live.Source); ok {
			o.View = live.New(src, o.Now, o.FailureWindow)
		} else {
			o.View = noView{}
		}
	}
	s := &server{Options: o, mux: http.NewServeMux()}
	s.fleet, _ = o.View.(fleetReader)
	h := &Handler{s: s}
	h.SetFailureWindow(o.FailureWindow)
	h.SetRunbookURL(o.RunbookURL)
	m := s.mux
	// Every route is recorded, for Patterns.
	handle := func(pattern string, h http.Handler) {
		m.Handle(pattern, h)
		s.patterns = append(s.patterns, pattern)
	}
	if o.Gatherer != nil {
		handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
			// A collector's failure must not fail the whole scrape.
			ErrorHandling: promhttp.ContinueOnError,
			ErrorLog:      zap.NewStdLog(o.Log.Named("metrics")),
			// Uncompressed: a pooled gzip writer costs more heap than it saves (ADR-0061).
			DisableCompression: true,
		}))
	}
	handle("GET /healthz", http.HandlerFunc(s.healthz))
	handle("GET /readyz", http.HandlerFunc(s.readyz))
	handle("GET /api/openapi.json", http.HandlerFunc(s.openapi))
	read := func(h http.HandlerFunc) http.Handler { return s.needs(ScopeRead, h) }
	handle("GET /api/v1/entities", read(s.listEntities))
	handle("POST /api/v1/entities", s.mutating(ScopeReport, s.register))
	handle("GET /api/v1/entities/{type}/{id}", read(s.getEntity))
	handle("POST /api/v1/entities/{type}/{id}/heartbeat", s.mutating(ScopeReport, s.heartbeat))
	handle("GET /api/v1/entities/{type}/{id}/transitions", read(s.getTransitions))
	handle("POST /api/v1/entities/{type}/{id}/transitions", s.mutating(ScopeReport, s.transition))
	handle("GET /api/attention", read(s.attentionQueue))
	handle("GET /api/attention/triage", read(s.triageLog))
	handle("POST "+attention.SnoozePath, s.mutating(ScopeTriage, s.snooze))
	handle("POST "+attention.DismissPath, s.mutating(ScopeTriage, s.dismiss))
	handle("POST /api/session", s.mutating(0, s.login))
	if o.Page != nil {
		for _, p := range PagePatterns {
			handle(p, s.pageAccess(p, o.Page))
		}
	}
	// The catch-all answers unknown paths and wrong methods in JSON.
	m.HandleFunc("/", s.fallback)
	h.next = s.accessLog(s.guardHost(m))
	return h
}

// statusWriter remembers the status for the access log, and closes the
// connection on an error answered before the body was read.
type statusWriter struct {
	http.ResponseWriter
	status int
	body   *readBody // nil: the request has none
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		if code >= 400 && w.body != nil && !w.body.ended {
			CloseUnread(w.ResponseWriter)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// CloseUnread closes the connection without draining the request's body,
// which net/http would read first, as slowly as the client sends (ADR-0063).
func CloseUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // a writer without deadlines (a test's recorder) has no connection to hold
}

// readBody notes that its end was read.
type readBody struct {
	io.ReadCloser
	ended bool
}

func (b *readBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.ended = true
	}
	return n, err
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog logs one debug line per request (no headers, so no token) and
// caps bodies on the server's own writer, so an oversized one closes the connection.
func (s *server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r.Body = http.MaxBytesReader(w, r.Body, wire.MaxBody)
		sw := &statusWriter{ResponseWriter: w}
		if r.ContentLength != 0 {
			sw.body = &readBody{ReadCloser: r.Body}
			r.Body = sw.body
		}
		defer func() {
			// A panic is a bug: answer 500 in JSON. ErrAbortHandler is net/http's own.
			if rec := recover(); rec != nil {
				if rec == http.ErrAbortHandler { //nolint:errorlint // a sentinel value, never wrapped
					panic(rec)
				}
				s.Log.Error("handler panicked (a bug)", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Any("panic", rec), zap.Stack("stack"))
				if sw.status == 0 {
					writeError(sw, http.StatusInternalServerError, causeInternal, "internal error (see the watchdog log)")
				}
			}
		}()
		next.ServeHTTP(sw, r)
		if ce := s.Log.Check(zap.DebugLevel, "http"); ce != nil {
			ce.Write(zap.String("method", r.Method), zap.String("path", r.URL.Path),
				zap.Int("status", sw.status), zap.Duration("took", time.Since(start)),
				zap.String("remote", r.RemoteAddr))
		}
	})
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "ok")
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.Ready != nil {
		if err := s.Ready(); err != nil {
			writeError(w, http.StatusServiceUnavailable, causeNotReady, "not ready: "+err.Error())
			return
		}
	}
	writeText(w, http.StatusOK, "ok")
}

// fallback answers what no pattern matched: 405 with Allow when the path
// exists under another method, else 404.
func (s *server) fallback(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, causeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+" (allowed: "+strings.Join(allow, ", ")+")")
		return
	}
	writeError(w, http.StatusNotFound, causeNotFoundPath, "no such endpoint: "+r.URL.Path)
}

// Causes of errors the API itself decides, beside transitions.Causes.
const (
	causeBadRequest       = "bad_request"
	causeTooLarge         = "too_large"
	causeOverLimit        = "over_limit"
	causeUnauthorized     = "unauthorized"
	causeMethodNotAllowed = "method_not_allowed"
	causeNotFoundPath     = "not_found"
	causeInternal         = "internal"
	causeNotReady         = "not_ready"
	causeUnavailable      = "unavailable"
	causeOutcomeUnknown   = "outcome_unknown"
)

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
	Cause string `json:"cause"`
}

func writeError(w http.ResponseWriter, status int, cause, msg string) {
	writeJSON(w, status, Error{Error: msg, Cause: cause})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing left to tell it
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// classify maps an error to its HTTP status and cause.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, wire.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, causeTooLarge
	case errors.Is(err, wire.ErrOverLimit):
		return http.StatusUnprocessableEntity, causeOverLimit
	case errors.Is(err, wire.ErrBadInput):
		return http.StatusBadRequest, causeBadRequest
	}
	switch store.Classify(err) {
	case store.FailureNotWritten:
		return http.StatusServiceUnavailable, causeUnavailable
	case store.FailureOutcomeUnknown:
		// 504, not 503: 503 always means "not written, retry" (ADR-0036).
		return http.StatusGatewayTimeout, causeOutcomeUnknown
	}
	cause := transitions.Cause(err)
	switch cause {
	case transitions.CauseNotFound, transitions.CauseUnknownType:
		return http.StatusNotFound, cause
	case transitions.CauseConflict:
		return http.StatusConflict, cause
	case transitions.CauseInvalidTransition, transitions.CauseUnknownState,
		transitions.CauseUnknownReason, transitions.CauseReasonRequired, transitions.CauseOverLimit, transitions.CausePIDRefused:
		return http.StatusUnprocessableEntity, cause
	case transitions.CauseForbidden:
		return http.StatusForbidden, cause
	case transitions.CauseInvalidInput:
		return http.StatusBadRequest, cause
	}
	return http.StatusInternalServerError, causeInternal
}

// fail writes err as an error response; a store failure's detail goes to
// the log, not the client (an unavailable store only at debug: the store watch logs it).
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, cause := classify(err)
	if status == http.StatusGatewayTimeout {
		s.Log.Warn("write outcome unknown: its commit was attempted and its result lost; the client was told to read before retrying",
			zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		writeError(w, status, cause, "the store could not confirm this write: its commit was attempted and the result was lost, so it may or may not be applied; read the entity before retrying")
		return
	}
	if status == http.StatusServiceUnavailable {
		s.Log.Debug("request refused: store unavailable", zap.String("path", r.URL.Path), zap.Error(err))
		w.Header().Set("Retry-After", "5")
		writeError(w, status, cause, "the store cannot take writes now (see /readyz and the watchdog log); the request was not acknowledged: retry later")
		return
	}
	if status == http.StatusInternalServerError {
		if r.Context().Err() != nil {
			s.Log.Debug("request cancelled", zap.String("path", r.URL.Path), zap.Error(err))
		} else {
			s.Log.Error("request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		}
		writeError(w, status, cause, "internal error: the store failed (see the watchdog log)")
		return
	}
	writeError(w, status, cause, err.Error())
}

// written answers a committed write whose read-back failed with success and
// the entity as sent: an error would say it was not applied.
func (s *server) written(w http.ResponseWriter, r *http.Request, status int, e store.Entity, readErr error) {
	s.Log.Warn("write applied, but reading it back for the response failed; answered with the request's own fields",
		zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(readErr))
	writeJSON(w, status, wire.FromEntity(e, nil, s.Heartbeats, s.Now()))
}

// canonicalType resolves a path's type (aliases allowed) or reports 404.
func canonicalType(t string) (string, error) {
	g, err := transitions.Lookup(t)
	if err != nil {
		return "", err
	}
	return g.Type, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// readerFor is what answers a synced read of host's entities ("": all): the
// live view, or on a fleet daemon a view read from the store now (ADR-0056).
func (s *server) readerFor(ctx context.Context, host string) (LiveReader, error) {
	if s.fleet != nil {
		return s.fleet.For(ctx, host, host == "")
	}
	return s.View, s.View.Sync(ctx)
}

// queueReaderFor is readerFor for the queue: on a fleet, read by index (ADR-0058).
func (s *server) queueReaderFor(ctx context.Context, host string) (LiveReader, error) {
	if s.fleet != nil {
		return s.fleet.ForQueue(ctx, host, host == "", s.Now())
	}
	return s.View, s.View.Sync(ctx)
}

// holdsAll says whether the live view holds every host's entities (ADR-0060).
func (s *server) holdsAll() bool {
	return s.fleet == nil || s.fleet.Complete("", true)
}

// noView stands in when the store cannot feed a view: a programming error made visible.
type noView struct{}

var errNoView = errors.New("api: the store has no change feed and no live view was given")

func (noView) Sync(context.Context) error                       { return errNoView }
func (noView) Get(string, string, time.Time) (live.Entry, bool) { return live.Entry{}, false }
func (noView) Each(string, func(*live.Entry))                   {}
func (noView) Attention(q attention.Query, now time.Time) attention.Queue {
	return attention.Assemble(nil, nil, q, now)
}
