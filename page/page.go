// Package page is the operator's page (docs/guide.md, ADR-0031, ADR-0051),
// server-rendered over the same live view the API reads; its script writes
// only through the API's endpoints. Its data-testid attributes are a
// contract with the browser tests.
package page

import (
	"cmp"
	"context"
	"embed"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"watchdog/attention"
	"watchdog/docs"
	"watchdog/internal/ctlesc"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/wire"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// LiveReader is what the page reads of the live view; *live.View is one.
type LiveReader interface {
	Sync(ctx context.Context) error
	Get(typ, id string, now time.Time) (live.Entry, bool)
	Each(typ string, fn func(*live.Entry))
	Attention(q attention.Query, now time.Time) attention.Queue
	Counts(now time.Time) live.Counts
	EntityItems(typ, id string, now time.Time) []attention.Item
	// Subscribe wakes the page's streams (GET /events) after changes.
	Subscribe() *live.Subscription
}

// fleetReader is a LiveReader that may not hold every entity and reads the
// rest from the store (ADR-0056, ADR-0060); *live.View is one.
type fleetReader interface {
	Holds(host string, all bool) bool
	Complete(host string, all bool) bool
	For(ctx context.Context, host string, all bool) (*live.View, error)
	ForQueue(ctx context.Context, host string, all bool, now time.Time) (*live.View, error)
	ListPage(ctx context.Context, host string, all bool, q store.ListQuery, now time.Time) (live.ListResult, bool, error)
	Scope(ctx context.Context, typ string) (hosts []string, legacy int, ok bool, err error)
}

// Store is what the entity page reads of the store; *sqlite.Store is one.
type Store interface {
	LatestTransitions(ctx context.Context, typ, id string, n int) ([]store.AuditRow, int, error)
	TransitionsAfter(ctx context.Context, typ, id string, after int64, limit int) ([]store.AuditRow, error)
	// HostNames maps host ids to the hostnames their daemons recorded.
	HostNames(ctx context.Context) (map[string]string, error)
}

// Options configure the page.
type Options struct {
	View  LiveReader
	Store Store
	// Auth tells the script that writes need a token, so it asks for one.
	Auth bool
	// TokenFile is where the token is read from; the token form names it.
	TokenFile string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives render failures; nil discards.
	Log *zap.Logger
	// Heartbeats finds the heartbeat an entity shows; nil shows the posted one.
	Heartbeats *wire.Heartbeats
	// Processes reads an open entity's process facts (ADR-0048); nil shows none.
	Processes *wire.Processes
	// RunbookURL is the base of the runbook links; "" links /runbook.
	RunbookURL string
	// StreamGap and StreamWriteWait override the constants (0: the constants).
	StreamGap, StreamWriteWait time.Duration
}

// Limits of what one page shows.
const (
	// QueueShown is how many queue items the page lists before "more" (?queue=N).
	QueueShown = 50
	// QueueLimit is the most queue items the page lists.
	QueueLimit = attention.MaxLimit
	// TablePage is how many entities one page of the table lists.
	TablePage = 50
	// TimelinePage is how many transitions an entity page lists.
	TimelinePage = 50
)

// Handler serves api.PagePatterns, mounted behind the API's Host guard.
type Handler struct {
	o       Options
	fleet   fleetReader // o.View, when it reads beyond what it holds
	tmpl    *template.Template
	mux     *http.ServeMux
	runbook atomic.Pointer[string]

	streams        streams
	gap, writeWait time.Duration
}

// SetRunbookURL makes the runbook links point at base ("" for /runbook).
func (h *Handler) SetRunbookURL(base string) { h.runbook.Store(&base) }

// todo is a reason code's runbook Do line and link; zero when none.
func (h *Handler) todo(code state.ReasonCode) todoData {
	td, ok := docs.For(*h.runbook.Load(), string(code))
	if !ok {
		return todoData{}
	}
	return todoData{Do: td.Do, Href: td.Link}
}

// New builds the page handler.
func New(o Options) *Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	h := &Handler{o: o, mux: http.NewServeMux(), gap: cmp.Or(o.StreamGap, StreamGap), writeWait: cmp.Or(o.StreamWriteWait, StreamWriteWait)}
	h.fleet, _ = o.View.(fleetReader)
	h.streams.done = make(chan struct{})
	h.SetRunbookURL(o.RunbookURL)
	h.tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"upper": strings.ToUpper,
	}).ParseFS(templateFS, "templates/*.html"))
	assets, _ := fs.Sub(assetFS, "assets") // a constant path: cannot fail
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.HandleFunc("GET /entities/{type}/{id}", h.entity)
	h.mux.HandleFunc("GET /runbook", h.runbookPage)
	h.mux.HandleFunc("GET /events", h.events)
	h.mux.Handle("GET /assets/", http.StripPrefix("/assets/", noStore(http.FileServerFS(assets))))
	return h
}

// ServeHTTP serves the page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// noStore keeps browsers from caching the assets across upgrades: embedded
// files have no modification time to revalidate.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// layout is what every page's frame needs.
type layout struct {
	Title string
	Auth  bool
	// Login is the sign-in page: no stream, no poll.
	Login       bool
	TokenFile   string
	GeneratedAt string
	// Choices and Default are the snooze durations the page offers.
	Choices []snoozeChoice
	Default string
	// Poll is how often (ms) a visible tab re-fetches besides the stream; 0 unless fleet.
	Poll int
}

// FleetPoll is how often a fleet daemon's visible page re-fetches besides
// its stream, which tells only its own host's changes (ADR-0056).
const FleetPoll = 10 * time.Second

// todoData is a reason code's line of what to do and its runbook link.
type todoData struct {
	Do, Href string
}

// SnoozeChoices are the page's snooze durations in seconds, shortest first.
var SnoozeChoices = []snoozeChoice{{"1h", 3600}, {"4h", 4 * 3600}, {"1d", 24 * 3600}, {"1w", 7 * 24 * 3600}}

// SnoozeDefault is the snooze choice selected at first.
const SnoozeDefault = "1d"

type snoozeChoice struct {
	Label   string
	Seconds int
}

// stamp is the page's "as of" moment, which a fragment sends as a header.
func (l layout) stamp() string { return l.GeneratedAt }

func (h *Handler) frame(r *http.Request, title string, now time.Time) layout {
	l := layout{Title: title, Auth: h.o.Auth && !sessionWrites(r.Context()), TokenFile: h.o.TokenFile, GeneratedAt: now.UTC().Format(time.RFC3339),
		Choices: SnoozeChoices, Default: SnoozeDefault}
	if h.fleet != nil && !h.fleet.Holds("", true) {
		l.Poll = int(FleetPoll / time.Millisecond)
	}
	return l
}

// runbookPage is GET /runbook: the runbook's reason-code sections.
func (h *Handler) runbookPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "runbook.html", struct {
		layout
		Sections []docs.Section
	}{h.frame(r, "runbook · watchdog", h.o.Now()), docs.Sections()})
}

// hostNames reads the hosts' names; a failure shows the ids, not an error.
func (h *Handler) hostNames(ctx context.Context) map[string]string {
	names, err := h.o.Store.HostNames(ctx)
	if err != nil && ctx.Err() == nil {
		h.o.Log.Warn("reading the hosts' names", zap.Error(err))
	}
	return names
}

// FragmentHeader asks for a page's <main> alone (value "main"), swapped in on a change.
const FragmentHeader = "X-Watchdog-Fragment"

func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	if r.Header.Get(FragmentHeader) == "main" {
		if t := h.tmpl.Lookup(strings.TrimSuffix(name, ".html") + "-main"); t != nil {
			name = t.Name()
			if l, ok := data.(interface{ stamp() string }); ok {
				w.Header().Set("X-Watchdog-Generated-At", l.stamp())
			}
		}
	}
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Scripts and styles only from this daemon; no frames of it elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	w.WriteHeader(status)
	// Evidence may hold ESC, BEL or OSC sequences: shown escaped, never raw.
	_, _ = io.WriteString(w, ctlesc.String(b.String())) // the client went away; nothing left to tell it
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request, msg string) {
	h.render(w, r, http.StatusNotFound, "notfound.html", struct {
		layout
		Message string
	}{h.frame(r, "not found · watchdog", h.o.Now()), msg})
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		h.o.Log.Error("page failed", zap.String("path", r.URL.Path), zap.Error(err))
	}
	http.Error(w, "internal error: see the watchdog log", http.StatusInternalServerError)
}
