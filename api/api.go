// Package api is watchdog's HTTP interface (docs/reference/http-api.md): the entity API an
// orchestrator in any language uses to register work and record
// transitions, the attention queue, /metrics, /healthz and
// /readyz. It is plain net/http with Go 1.22 ServeMux patterns.
//
// # Requests and errors
//
// Request bodies are JSON decoded strictly (wire.Decode): unknown fields,
// trailing data and malformed documents are 400, bodies over 1 MiB are
// 413, a field over one of wire's limits (limits.go: reason messages,
// evidence, labels, ids, metadata size and depth) is 422 naming the field
// and the limit, and so is a number outside its range
// (transitions/ranges.go: pids, times, timeouts, sizes, a snooze's until),
// checked by wire.DecodeAt on the literal as sent, before decoding. Every error a handler or middleware writes, panics
// included, is a JSON object {"error": "...", "cause": "..."} whose error
// is one sentence a person can act on and whose cause is a closed
// vocabulary a program can switch on (the write path's rejection causes
// of transitions.Causes, plus bad_request, too_large, over_limit,
// unauthorized, cross_origin, host_not_allowed, unsupported_media_type,
// method_not_allowed, not_found, not_ready and internal). Only what
// net/http refuses before any handler runs (a malformed request line or
// header) is its own plain-text 400. A rejected request changes nothing:
// validation happens before the one write, and the write path's own
// checks run inside its transaction.
//
// Status codes: 200 applied or read, 201 created, 400 malformed input,
// 401 missing or wrong token, 403 an actor the caller may not use, a
// target it may not set, a foreign Host or a cross-site browser request,
// 404 unknown entity, type or fingerprint, 405 wrong method, 409 a lost
// compare-and-set race, 413 too large, 415 a POST that is not
// application/json, 422 an edge, state or reason the vocabulary does not
// allow, a field over its limit or a number out of its range, 500 a fault
// of watchdog or of its data (details in the log, not in the response),
// 503 not ready (/readyz), or the store cannot take the request now and
// nothing was written (store.FailureNotWritten: its file deleted or
// replaced, a read-only, full or failing disk, no file descriptor left, a
// PostgreSQL server gone; cause "unavailable", with Retry-After; /readyz
// says why), 504 a write whose commit was attempted and whose result could
// not be learned (store.FailureOutcomeUnknown; cause "outcome_unknown": it
// may or may not be applied, so read before retrying). store.Classify is
// the one rule for both drivers; a write that committed is never answered
// 503.
//
// Reads are bounded: the entity read carries the latest 100 audit rows and
// transitions_total; GET …/{type}/{id}/transitions?after=SEQ&limit=N pages
// the history by seq; GET /api/v1/entities pages by an opaque cursor
// (wire.ListOrder says which order walks every entity exactly once).
//
// # Web pages (ADR-0011)
//
// A browser on the host is a client too, driven by any page it opens.
// Three rules, with or without auth, keep pages out: a Host header must
// be an IP address, localhost or a configured allowed_hosts name (DNS
// rebinding; every endpoint, reads too); a POST whose Origin is not this
// daemon or whose Sec-Fetch-Site is cross-site or same-site is 403; a POST
// must say Content-Type: application/json (415), which no form and no
// fetch can send cross-origin without a CORS preflight, never granted
// here. curl, the Go client and Python's urllib send no Origin and pass.
//
// # Authentication and actors
//
// By default writes need a token: the daemon reads auth.token_file, or
// creates its own watchdog.token beside the database (daemon.ownToken).
// With `auth: none` (Options.Token == ""), which the daemon allows only on
// a loopback address (config.CheckListen), any local process may write, and a
// transition's body may name its actor: orchestrator (the default), admin
// or exec.
//
// With a token, every POST needs `Authorization: Bearer <token>`,
// compared in constant time; anything else is 401 with
// `WWW-Authenticate: Bearer`. GET endpoints stay open: they reveal states,
// not secrets, and Prometheus and dashboards read them. There is one
// token, and it decides the actor: its bearer is the orchestrator, the
// principal that runs work (the exec wrapper is a work runner too and may
// label its writes `exec`). A body naming `admin` is 403: an admin
// verdict needs a principal the daemon can tell apart, which one shared
// token cannot be (a second, admin token is not built). The `reaper`
// actor is never accepted over HTTP, with or without a token: only the
// daemon's own jobs write as the reaper, and an audit row saying so must
// be true.
//
// Tokens are never logged. Registrations and heartbeats are written as
// the orchestrator; dismissals record dismissed_by "operator", the ADR's
// default, since the API cannot tell people apart.
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

// Store is what the API reads and writes besides the write path;
// *sqlite.Store is one.
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

// fleetReader is a LiveReader that may not hold every entity (a daemon
// of a fleet, ended entities aged out: ADR-0056, ADR-0060) and reads the
// rest from the store; *live.View is one.
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
	// Log receives the access log (debug) and store failures (error);
	// nil discards.
	Log *zap.Logger
	// Tokens are the bearer tokens accepted (see auth.go); nil is
	// auth: none, loopback only: any local caller may do everything.
	// Requests over the local socket (PeerContext) need none: the
	// kernel names their uid.
	Tokens *Tokens
	// Login answers a page request that showed no credentials (the
	// page's sign-in form, page.Login); nil answers 401 in JSON.
	Login http.Handler
	// PublicReads opens the reads to callers with no credentials
	// (auth.public_reads).
	PublicReads bool
	// AllowedHosts are the names, besides IP addresses and localhost, a
	// request's Host header may carry (config allowed_hosts).
	AllowedHosts []string
	// Gatherer is served at /metrics; nil leaves /metrics out.
	Gatherer prometheus.Gatherer
	// Ready is /readyz: nil means always ready.
	Ready func() error
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// FailureWindow is how long ended failures stay in the attention
	// queue; 0 means 24h.
	FailureWindow time.Duration
	// View is what the entity read, the list and the attention queue
	// read (the daemon's one view). When nil, the handler keeps its own
	// view of Store, which must then be a live.Source (*sqlite.Store is).
	View LiveReader
	// Metrics, when set, counts the transitions the API itself refuses
	// before the write path sees them (bad documents, forbidden actors),
	// and is told the failure window so its attention gauge counts the
	// same queue as /api/attention.
	Metrics *metrics.Metrics
	// Page, when set, is the operator's page (package page), served at
	// PagePatterns behind the same Host guard as the API; its writes go
	// through the API's own endpoints.
	Page http.Handler
	// Heartbeats finds the heartbeat each entity read shows: the one the
	// judgement takes, a heartbeat file of this host's read at the
	// request (wire.Heartbeats); nil shows the posted one.
	Heartbeats *wire.Heartbeats
	// Processes reads an open entity's process facts, on this host, when
	// the entity is read (and on a list asked ?process=true); nil shows
	// none (ADR-0048).
	Processes *wire.Processes
	// RunbookURL is alertmanager.runbook_url: the base of each queue
	// item's runbook_url (docs.For); "" links the daemon's own /runbook.
	// SetRunbookURL changes it on reload.
	RunbookURL string
}

// PagePatterns are the routes the operator's page answers: GET / (the
// queue and the entity table), the entity pages, the runbook's reason-code
// sections, the stream of the view's changes the page follows and their
// assets.
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

// openapi is GET /api/openapi.json: the API's OpenAPI 3.1 document, open
// to every caller as /metrics is (a contract is no secret).
func (s *server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(docs.OpenAPI)
}

// Handler is the API. SetFailureWindow changes the attention queue's
// failure window while it serves (a config reload).
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

// SetRunbookURL makes the queue items' runbook links point at base (the
// reloaded alertmanager.runbook_url; "" for the daemon's own /runbook).
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
	// Every route is registered here, and recorded: Patterns lists them
	// for the OpenAPI document's test.
	handle := func(pattern string, h http.Handler) {
		m.Handle(pattern, h)
		s.patterns = append(s.patterns, pattern)
	}
	if o.Gatherer != nil {
		handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
			// A collector's failure must not turn the whole scrape into an
			// error page: serve what was gathered.
			ErrorHandling: promhttp.ContinueOnError,
			ErrorLog:      zap.NewStdLog(o.Log.Named("metrics")),
			// Uncompressed (ADR-0061): a gzip writer is about 1.5 MB of
			// heap, which the handler's pool keeps while scrapes come,
			// to save about 90 KB a scrape at 10,000 entities.
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
	// The catch-all answers unknown paths and wrong methods in JSON; the
	// mux's own answers are plain text.
	m.HandleFunc("/", s.fallback)
	h.next = s.accessLog(s.guardHost(m))
	return h
}

// statusWriter remembers the status for the access log, and closes the
// connection after an error answered before the request's body was read
// (a refusal on the headers): net/http would otherwise read up to 256 KiB
// more of the body, as slowly as the client sends it, even with
// Connection: close; a read deadline already past ends that read at once.
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

// CloseUnread makes the answer close its connection without reading what
// is left of the request's body: net/http would otherwise read up to 256
// KiB of it first, as slowly as the client sends it, even with
// Connection: close; a read deadline already past ends that read at once.
// The API's refusals and the daemon's connection limiter share it.
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

// Unwrap lets http.ResponseController reach the real writer (flushes,
// deadlines, MaxBytesReader's connection handling).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog logs one debug line per request: method, path, status,
// duration. Headers are not logged, so neither is the token. It also caps
// every body at wire.MaxBody, here on the server's own writer, so that an
// oversized body also closes the connection instead of being drained.
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
			// A handler's panic is a bug: log it, and answer like any
			// other internal error (JSON) instead of net/http's dropped
			// connection. ErrAbortHandler is net/http's own way out.
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

// classify maps an error to its status and cause. Write-path sentinels
// keep their own cause (transitions.Cause); decoding errors are 400 or
// 413; anything else is a store failure.
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
		// 504, not 503: 503 always means "not written, retry". Like a
		// gateway's timeout, the upstream (the store) took the commit and
		// its answer was lost.
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

// fail writes err as an error response. A store failure is logged with
// its detail and answered with a generic sentence: the path of the
// database and the driver's words are for the operator's log.
//
// An unavailable store is logged once by the daemon's store watch, not
// once per refused request: here it is debug.
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

// written answers a write that committed when reading it back for the
// response failed: with the write's own status, never an error, which
// would tell the client it was not applied. The body is e, the entity as
// the request wrote it (a GET shows the rest).
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

// readerFor is what answers a read of host's entities ("": every
// host's), synced: the live view when it holds them; else (a daemon of a
// fleet holds what it owns, ADR-0056) a view of them read from the store
// now (live.View.For).
func (s *server) readerFor(ctx context.Context, host string) (LiveReader, error) {
	if s.fleet != nil {
		return s.fleet.For(ctx, host, host == "")
	}
	return s.View, s.View.Sync(ctx)
}

// queueReaderFor is readerFor for a read of the attention queue: on a
// daemon of a fleet, a view of the queue's candidates only, read by index
// (live.View.ForQueue, ADR-0058).
func (s *server) queueReaderFor(ctx context.Context, host string) (LiveReader, error) {
	if s.fleet != nil {
		return s.fleet.ForQueue(ctx, host, host == "", s.Now())
	}
	return s.View, s.View.Sync(ctx)
}

// holdsAll says whether the live view holds every host's entities: a
// lone daemon's does, but for the ended ones it dropped once they aged
// out of the failure window (ADR-0060); a daemon of a fleet holds what it
// owns.
func (s *server) holdsAll() bool {
	return s.fleet == nil || s.fleet.Complete("", true)
}

// noView stands in for a view when the store cannot feed one: every read
// that needs it fails with errNoView, a programming error made visible.
type noView struct{}

var errNoView = errors.New("api: the store has no change feed and no live view was given")

func (noView) Sync(context.Context) error                       { return errNoView }
func (noView) Get(string, string, time.Time) (live.Entry, bool) { return live.Entry{}, false }
func (noView) Each(string, func(*live.Entry))                   {}
func (noView) Attention(q attention.Query, now time.Time) attention.Queue {
	return attention.Assemble(nil, nil, q, now)
}
