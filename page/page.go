// Package page is the operator's page (README, "The operator's page"): the attention queue, the
// entity table and the entity pages, server-rendered with html/template
// from embedded files over the daemon's live view, the same view the JSON
// API reads (the same queue as GET /api/attention, the same entities,
// selection and order as GET /api/v1/entities, a page of the table at a
// time). GET /events streams the view's changes (server-sent events over
// a live.Subscription); one small embedded script follows it while the
// tab is visible, re-fetching what it shows when that changed (ADR-0051),
// and sends snooze and dismiss through the API's own endpoints, under the
// API's auth and origin rules: the page adds no write endpoint. No CDN,
// no build step.
//
// The DOM carries data-testid attributes the browser tests select by
// (ADR-0031, "page-operator-page"); they are a contract: renaming one
// breaks the tests on purpose.
package page

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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
	"watchdog/transitions"
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

// Store is the part of the store the entity page reads: the transitions
// timeline; *sqlite.Store is one.
type Store interface {
	LatestTransitions(ctx context.Context, typ, id string, n int) ([]store.AuditRow, int, error)
	TransitionsAfter(ctx context.Context, typ, id string, after int64, limit int) ([]store.AuditRow, error)
	// HostNames names the hosts by the hostname their daemon recorded
	// at its start: the page shows a host by it, its id on hover.
	HostNames(ctx context.Context) (map[string]string, error)
}

// Options configure the page.
type Options struct {
	View  LiveReader
	Store Store
	// Auth tells the script that writes need a token, so it asks for one
	// (once per tab) before the first snooze or dismiss.
	Auth bool
	// TokenFile is where the token is read from (auth.token_file, or the
	// daemon's own beside the database): the token form names it.
	TokenFile string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives render failures; nil discards.
	Log *zap.Logger
	// Heartbeats finds the heartbeat an entity shows: the one the
	// judgement takes, as the API's entity read does (wire.Heartbeats);
	// nil shows the posted one.
	Heartbeats *wire.Heartbeats
	// Processes reads an open entity's process facts for its page, as the
	// API's entity read does (wire.Processes, ADR-0048); nil shows none.
	Processes *wire.Processes
	// RunbookURL is alertmanager.runbook_url: where the runbook links of
	// the queue and the entity pages point (docs.Link); "" links the
	// daemon's own /runbook. SetRunbookURL changes it on reload.
	RunbookURL string
	// StreamGap and StreamWriteWait are the stream's (0: the constants
	// of the same names); a test or a benchmark shortens them.
	StreamGap, StreamWriteWait time.Duration
}

// Limits of what one page shows.
const (
	// QueueShown is how many queue items the page lists at first; its
	// "more" link lists more (?queue=N), up to QueueLimit. The counts
	// above them cover the whole queue.
	QueueShown = 50
	// QueueLimit is the most queue items the page lists (the API's
	// largest page).
	QueueLimit = attention.MaxLimit
	// TablePage is how many entities one page of the table lists; its
	// Next link (?after=) pages on.
	TablePage = 50
	// TimelinePage is how many transitions an entity page lists.
	TimelinePage = 50
)

// Handler serves the page: GET / (queue and entity table), GET
// /entities/{type}/{id} (one entity), GET /events (the stream of the
// view's changes the script follows) and GET /assets/ (the stylesheet and
// the script): api.PagePatterns, which the API's mux mounts behind its
// Host guard.
type Handler struct {
	o       Options
	tmpl    *template.Template
	mux     *http.ServeMux
	runbook atomic.Pointer[string]

	streams        streams
	gap, writeWait time.Duration
}

// SetRunbookURL makes the runbook links point at base (the reloaded
// alertmanager.runbook_url; "" for the daemon's own /runbook).
func (h *Handler) SetRunbookURL(base string) { h.runbook.Store(&base) }

// todo is what the page says to do about a reason code: its runbook
// section's Do line and the link to the section; zero when the runbook
// has none.
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

// noStore keeps browsers from caching the assets across daemon upgrades
// (they are a few kilobytes; the embedded files carry no modification
// time to revalidate against).
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
	// Poll is how often (ms) a visible tab re-fetches besides the stream;
	// 0 but on a fleet's daemon (FleetPoll).
	Poll int
}

// FleetPoll is how often a visible page served by a fleet's daemon
// re-fetches besides its stream: the stream tells the changes of what the
// daemon's view holds (its own host's, ADR-0056), and the page shows
// every host's, whose changes reach it only so.
const FleetPoll = 10 * time.Second

// indexPage is GET /.
type indexPage struct {
	layout
	Queue    queueData
	Filter   filterData
	Entities []entityRow
	// Shown is how many rows this page of the table lists, First the
	// position of its first row (from 1), Total how many rows the
	// filters select.
	Shown, First, Total int
	// Next is the link to the table's next page, "" on the last;
	// FirstPage the link back to its first page, "" on it.
	Next, FirstPage string
	Legacy          int
	FilterErr       string
}

// Last is the position of the page's last row.
func (p indexPage) Last() int { return p.First + p.Shown - 1 }

type queueData struct {
	Total    int
	Sections []severitySection
	// More is the link that lists more of the queue, "" when every item
	// is listed (or QueueLimit are).
	More string
}

type severitySection struct {
	Severity string
	Count    int
	Clusters []clusterData
}

type clusterData struct {
	ID string
	// Todo is what to do about the cluster's reason code (one per
	// cluster: a cluster is one code).
	Todo todoData
	// Fingerprints are the listed items' fingerprints as a JSON list:
	// what the cluster's Snooze and Dismiss act on, exactly what the
	// operator sees (a newer item is not swept up unseen).
	Fingerprints string
	// Header speaks for all the cluster's items (attention.ClusterOf):
	// the reason's registered summary, the range of their onsets and
	// their entities, never one item's message.
	Header string
	Items  []itemData
	items  []attention.Item
}

// Size is the number of the cluster's items on the page.
func (c clusterData) Size() int { return len(c.Items) }

// Collapsed reports whether the cluster starts folded: more than one item.
func (c clusterData) Collapsed() bool { return len(c.Items) > 1 }

// todoData is a reason code's line of what to do and its runbook link.
type todoData struct {
	Do, Href string
}

// SnoozeChoices are the page's snooze durations, in seconds (the API's
// "for"), the shortest first; SnoozeDefault is the one selected.
var SnoozeChoices = []snoozeChoice{{"1h", 3600}, {"4h", 4 * 3600}, {"1d", 24 * 3600}, {"1w", 7 * 24 * 3600}}

// SnoozeDefault is the choice selected at first: a day, as the item's own
// Snooze action.
const SnoozeDefault = "1d"

type snoozeChoice struct {
	Label   string
	Seconds int
}

type itemData struct {
	Fingerprint string
	Label       string
	Type        string
	Age         string
	Summary     string
	Status      string
	// Heartbeat is the item's heartbeat part, as `watchdog attention`
	// prints it ("last heartbeat 4s ago (file)"), "" when its reason does
	// not call for it (attention.Item.HeartbeatText).
	Heartbeat   string
	Href        string
	SnoozeBody  string
	DismissBody string
}

type filterData struct {
	Type, Severity, Host string
	// Order is the table's order (Orders).
	Order      string
	Types      []string
	Severities []string
	Orders     []string
	Hosts      []hostOption
}

// hostOption is a host the filter offers: its id (what the filter takes)
// and its name.
type hostOption struct{ ID, Name string }

// Active reports whether any filter is set.
func (f filterData) Active() bool { return f.Type != "" || f.Severity != "" || f.Host != "" }

// pill is one pill of the compound state (state.StatePills).
type pill struct {
	Tone, Text, Title string
	// Dimension is the state.StatePill's (lifecycle, health, delivery,
	// finding).
	Dimension string
	Icon      template.HTML
}

type entityRow struct {
	Type, ID, Label, Href string
	Chain                 string
	// Pills are the compound state: the lifecycle's, then one per
	// problem (state.StatePills).
	Pills     []pill
	PID       string
	Since     string
	Heartbeat string
	// HeartbeatSource is where Heartbeat came from: "file" or "posted".
	HeartbeatSource string
	Exit            string
	// Host is the host's name (the hostname its daemon recorded), else
	// its id; HostID is the id, shown on hover.
	Host, HostID string
}

// entityPage is GET /entities/{type}/{id}.
type entityPage struct {
	layout
	Row       entityRow
	Severity  string
	Reasons   []reasonData
	Timeline  []timelineRow
	Total     int
	Older     string // the link to the page from the first transition
	Newer     string // the link to the next page, when paging
	Latest    string // the link back to the latest transitions, when paging
	Paging    bool
	Heartbeat string
	Progress  string
	// HangDetection is the entity read's hang_detection: why a hang would
	// not be seen ("" when it would).
	HangDetection string
	// Leftovers is what the named leftovers still running are doing.
	Leftovers *leftoverData
	// Process is the open entity's process facts, read for this page; nil
	// when it has none (ended, another host, no pid).
	Process *processData
}

// processData is the entity page's process facts, as text.
type processData struct {
	Unavailable                         string
	CPU, RSS, Uptime, Tasks, TreeRSS    string
	Descendants, Threads, CPUTime, Mode string
}

// processDataOf is f as the page shows it.
// leftoverData is the entity page's line on the leftovers still running.
type leftoverData struct {
	Running int
	CPU     string // "49.0%", their sum
	RSS     string
}

// leftoverDataOf is f as the page shows it; nil when none runs.
func leftoverDataOf(f *state.LeftoverFacts) *leftoverData {
	if f == nil || f.Running == 0 {
		return nil
	}
	return &leftoverData{Running: f.Running, CPU: strconv.FormatFloat(f.CPUPercent, 'f', 1, 64) + "%", RSS: state.FormatBytes(f.RSSBytes)}
}

func processDataOf(f *state.ProcessFacts) *processData {
	if f == nil {
		return nil
	}
	u := f.ProcessUsage
	if u == nil {
		return &processData{Unavailable: f.Unavailable}
	}
	return &processData{
		CPU:         strconv.FormatFloat(u.CPUPercent, 'f', 1, 64) + "% over " + state.FormatAge(time.Duration(u.CPUWindowSeconds*float64(time.Second))),
		CPUTime:     strconv.FormatFloat(u.TreeCPUSeconds, 'f', 2, 64) + "s",
		RSS:         state.FormatBytes(u.RSSBytes),
		TreeRSS:     state.FormatBytes(u.TreeRSSBytes),
		Uptime:      state.FormatAge(time.Duration(u.UptimeSeconds * float64(time.Second))),
		Tasks:       u.TasksText(),
		Threads:     strconv.Itoa(u.Threads),
		Descendants: u.DescendantsText(),
		Mode:        u.TreeMode,
	}
}

type reasonData struct {
	Code     string
	Message  string
	Evidence []evidenceLine
	Todo     todoData
	// Fingerprint is set when the reason is an attention item in the
	// queue now: the entity page's Snooze and Dismiss act on it.
	Fingerprint string
	// Hidden says how a dismissal hides the item now ("snoozed until
	// 18:02:11Z", "dismissed"), "" when it shows.
	Hidden string
}

// evidenceLine is one line of a reason's evidence, cut where it writes a
// moment (state.EvidenceRef.Times): the moments are shown as date-times
// with their age, never as the raw Unix seconds the detail may write.
type evidenceLine []evidencePart

// evidencePart is text, or a moment when At is set.
type evidencePart struct {
	Text string
	// At is the moment (RFC 3339, UTC) for <time datetime>, which the
	// script shows in the browser's zone; Text is then its UTC form and
	// Age its age.
	At, Age string
}

type timelineRow struct {
	Seq     int64
	At      string
	Age     string
	From    string
	To      string
	Code    string
	Message string
	Actor   string
	Trigger string
}

// stamp is the page's "as of" moment, which a fragment sends as a header.
func (l layout) stamp() string { return l.GeneratedAt }

func (h *Handler) frame(r *http.Request, title string, now time.Time) layout {
	l := layout{Title: title, Auth: h.o.Auth && !sessionWrites(r.Context()), TokenFile: h.o.TokenFile, GeneratedAt: now.UTC().Format(time.RFC3339),
		Choices: SnoozeChoices, Default: SnoozeDefault}
	if v, ok := h.o.View.(*live.View); ok && !v.Holds("", true) {
		l.Poll = int(FleetPoll / time.Millisecond)
	}
	return l
}

// fleetView is what the page reads, synced: the live view when it holds
// every host's entities (a lone daemon's), else (a daemon of a fleet holds
// what it owns, ADR-0056) every host's read from the store now.
func (h *Handler) fleetView(ctx context.Context) (LiveReader, error) {
	if v, ok := h.o.View.(*live.View); ok {
		return v.For(ctx, "", true)
	}
	return h.o.View, h.o.View.Sync(ctx)
}

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := indexPage{}
	// The parameters are checked before anything is read: a bad one is
	// one message and a 400, with the page's frame and the queue.
	f := filterData{Type: q.Get("type"), Severity: q.Get("severity"), Host: q.Get("host"), Order: q.Get("order"), Types: transitions.Types(), Orders: Orders}
	for _, s := range state.Severities {
		f.Severities = append(f.Severities, string(s))
	}
	var sev []state.Severity
	fail := func(msg string) {
		if p.FilterErr == "" {
			p.FilterErr = msg
		}
	}
	if f.Type != "" {
		canon, ok := transitions.CanonicalType(f.Type)
		if !ok {
			fail("type " + strconv.Quote(f.Type) + " is not an entity type")
		}
		f.Type = canon
	}
	if f.Severity != "" {
		s, err := state.ParseSeverities(f.Severity, state.Severities)
		if err != nil {
			fail("severity " + err.Error())
		}
		sev = s
	}
	order := cmp.Or(f.Order, orderSeverity)
	if !slices.Contains(Orders, order) {
		fail("order " + strconv.Quote(f.Order) + " is not one of " + strings.Join(Orders, ", "))
		order = orderSeverity
	}
	f.Order = order
	var after *rowKey
	if c := q.Get("after"); c != "" && p.FilterErr == "" {
		k, err := decodeCursor(c, order)
		if err != nil {
			fail(err.Error())
		} else {
			after = &k
		}
	}
	queueShown := QueueShown
	if v := q.Get("queue"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > QueueLimit {
			fail("queue " + strconv.Quote(v) + " is not a number of items from 1 to " + strconv.Itoa(QueueLimit))
		} else {
			queueShown = n
		}
	}

	if f.Host != "" {
		// A host by its name or its id, as the table shows it.
		id, err := wire.ResolveHost(f.Host, h.hostNames(r.Context()))
		if err != nil {
			fail("host: " + err.Error())
		}
		f.Host = cmp.Or(id, f.Host)
	}

	// On a daemon of a fleet, every host's entities are read by index
	// (ADR-0058): the queue's candidates, the table's page, the host menu
	// and the legacy count; else the view (the daemon's own, or one read
	// from the store for this request).
	var (
		view       LiveReader
		byIndex    *live.View
		listed     live.ListResult
		scopeHosts []string
		legacy     int
	)
	if v, ok := h.o.View.(*live.View); ok && !v.Complete("", true) {
		hs, n, ok, err := v.Scope(r.Context(), f.Type)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if ok && p.FilterErr == "" {
			// The table's page first: when its stale rows cannot be
			// derived and written back (a full or read-only store), the
			// whole page is read from a view of the store, as when the
			// scope cannot be read by index, not refused.
			sq := store.ListQuery{ByID: order == orderID, Type: f.Type, Severities: sev, Limit: TablePage}
			if after != nil {
				sq.After = &store.ListKey{Rank: after.Rank, Updated: after.Updated.Time, Type: after.Type, ID: after.ID}
			}
			listed, ok, err = v.ListPage(r.Context(), f.Host, f.Host == "", sq, h.o.Now())
			if err != nil {
				h.fail(w, r, err)
				return
			}
		}
		if ok {
			qv, err := v.ForQueue(r.Context(), "", true, h.o.Now())
			if err != nil {
				h.fail(w, r, err)
				return
			}
			view, byIndex, scopeHosts, legacy = qv, v, hs, n
		}
	}
	if view == nil {
		v, err := h.fleetView(r.Context())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		view = v
		legacy = v.Counts(h.o.Now()).Legacy
	}
	now := h.o.Now()
	p.layout = h.frame(r, "watchdog", now)
	queue := view.Attention(attention.Query{Limit: queueShown}, now)
	// The heartbeat each item's entity is judged by, found now, as the
	// API's queue shows it.
	queue.FillHeartbeats(func(typ, id string) *state.JudgedHeartbeat {
		ent, ok := view.Get(typ, id, now)
		if !ok {
			return nil
		}
		return h.o.Heartbeats.Of(&ent.Entity, now)
	})
	p.Queue = buildQueue(queue, now, h.todo)
	if len(queue.Items) < queue.Total && queueShown < QueueLimit {
		more := maps.Clone(q)
		more.Set("queue", strconv.Itoa(min(QueueLimit, 4*queueShown)))
		p.Queue.More = "/?" + more.Encode()
	}
	p.Legacy = legacy
	p.Filter = f

	hosts := map[string]bool{}
	if p.FilterErr == "" && byIndex != nil {
		res := listed
		next := ""
		if len(res.Entries) > TablePage {
			res.Entries = res.Entries[:TablePage]
			l := &res.Entries[TablePage-1]
			next = encodeCursor(keyOf(order, l.State, l.Entity.UpdatedAt, l.Entity.Type, l.Entity.ID))
		}
		p.Total, p.First = res.Total, res.Before+1
		names := h.hostNames(r.Context())
		for _, host := range scopeHosts {
			p.Filter.Hosts = append(p.Filter.Hosts, hostOption{ID: host, Name: names[host]})
		}
		for i := range res.Entries {
			e := &res.Entries[i]
			ns := e.State
			ns.EvaluatedAt.Time = now
			we := wire.FromDerived(e.Entity, ns, nil, h.o.Heartbeats, now)
			p.Entities = append(p.Entities, rowOf(&we, names, now))
		}
		p.Shown = len(p.Entities)
		h.links(&p, q, next, after != nil)
	} else if p.FilterErr == "" {
		// The rows the API's list would select (wire.EntityFilter), in
		// its order, one page of them kept as the view is walked.
		sel := wire.EntityFilter{Type: f.Type, Severities: sev, Host: f.Host}
		pg := pageOf{limit: TablePage, after: after}
		view.Each(f.Type, func(e *live.Entry) {
			if e.Entity.HostID != "" {
				hosts[e.Entity.HostID] = true
			}
			if !sel.Keeps(&e.Entity, e.State) {
				return
			}
			pg.add(row{key: keyOf(order, e.State, e.Entity.UpdatedAt, e.Entity.Type, e.Entity.ID), ref: e.Ref(), ns: e.State})
		})
		rows, next := pg.page()
		p.Total, p.First = pg.total, pg.before+1
		names := h.hostNames(r.Context())
		for host := range hosts {
			p.Filter.Hosts = append(p.Filter.Hosts, hostOption{ID: host, Name: names[host]})
		}
		slices.SortFunc(p.Filter.Hosts, func(a, b hostOption) int { return cmp.Compare(a.ID, b.ID) })
		for _, rw := range rows {
			// Only the page's rows are rebuilt whole, and only theirs get
			// their heartbeat file read: never under the view's lock.
			ent := rw.ref.Entity()
			ns := rw.ns
			ns.EvaluatedAt.Time = now
			we := wire.FromDerived(ent, ns, nil, h.o.Heartbeats, now)
			p.Entities = append(p.Entities, rowOf(&we, names, now))
		}
		p.Shown = len(p.Entities)
		h.links(&p, q, next, after != nil)
	}
	status := http.StatusOK
	if p.FilterErr != "" {
		status = http.StatusBadRequest
	}
	h.render(w, r, status, "index.html", p)
}

// links sets the table's links: to the next page (next, its cursor: ""
// when none follows) and, past the first page, to the first.
func (h *Handler) links(p *indexPage, q url.Values, next string, paged bool) {
	if next != "" {
		nq := maps.Clone(q)
		nq.Set("after", next)
		nq.Del("queue")
		p.Next = "/?" + nq.Encode()
	}
	if paged {
		fq := maps.Clone(q)
		fq.Del("after")
		fq.Del("queue")
		p.FirstPage = "/"
		if len(fq) > 0 {
			p.FirstPage += "?" + fq.Encode()
		}
	}
}

func (h *Handler) entity(w http.ResponseWriter, r *http.Request) {
	typ, ok := transitions.CanonicalType(r.PathValue("type"))
	id := r.PathValue("id")
	if !ok {
		h.notFound(w, r, "no entity type "+strconv.Quote(r.PathValue("type")))
		return
	}
	ctx := r.Context()
	if err := h.o.View.Sync(ctx); err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.o.Now()
	var view LiveReader = h.o.View
	ent, found := view.Get(typ, id, now)
	if v, ok := h.o.View.(*live.View); ok && !found && !v.Complete("", true) {
		// Another host's entity, which a daemon of a fleet does not hold
		// (ADR-0056): read with its host's from the store (every host's
		// when the store cannot say which host it is of). Or one of a
		// host the view holds, which it dropped once it aged out of the
		// failure window (ADR-0060): the store's row, derived as the view
		// derives, and no items (aged out, it has none in the queue).
		var other *live.View
		var err error
		if g, ok := h.o.Store.(interface {
			Get(ctx context.Context, typ, id string) (store.Entity, error)
		}); ok {
			var e store.Entity
			if e, err = g.Get(ctx, typ, id); err == nil && v.Holds(e.HostID, false) {
				ent, found = live.EntryOf(e, now), true
			} else if err == nil {
				other, err = v.For(ctx, e.HostID, false)
			} else if errors.Is(err, store.ErrNotFound) {
				h.notFound(w, r, "no entity "+typ+"/"+id)
				return
			}
		} else {
			other, err = v.For(ctx, "", true)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if other != nil {
			view = other
			ent, found = view.Get(typ, id, now)
		}
	}
	if !found {
		h.notFound(w, r, "no entity "+typ+"/"+id)
		return
	}
	we := wire.FromDerived(ent.Entity, ent.State, nil, h.o.Heartbeats, now)
	p := entityPage{layout: h.frame(r, labelOf(&we)+" · watchdog", now), Row: rowOf(&we, h.hostNames(ctx), now), Severity: string(we.State.Severity), HangDetection: we.HangDetection}
	if we.State.Legacy() {
		p.Severity = "legacy"
	}
	p.Progress = we.HeartbeatProgress
	p.Process = processDataOf(h.o.Processes.Of(&ent.Entity, now))
	p.Leftovers = leftoverDataOf(h.o.Processes.LeftoversOf(&ent.Entity, now))
	// The entity's items as the queue serves them: which reasons the
	// page may snooze or dismiss, and which a dismissal hides now.
	items := map[state.ReasonCode]attention.Item{}
	for _, it := range view.EntityItems(typ, id, now) {
		items[it.Reason.Code] = it
	}
	for _, rs := range we.State.Reasons {
		rv := reasonData{Code: string(rs.Code), Message: rs.Message, Todo: h.todo(rs.Code)}
		for _, ev := range rs.Evidence {
			rv.Evidence = append(rv.Evidence, evidenceOf(ev, now))
		}
		if it, ok := items[rs.Code]; ok {
			rv.Fingerprint, rv.Hidden = it.Fingerprint, hiddenText(it, now)
			delete(items, rs.Code)
		}
		p.Reasons = append(p.Reasons, rv)
	}
	// An item whose code is not among the reasons shown (a code of the
	// entity's health or delivery value, or system.outcome.unexplained)
	// still gets its row: the page must let every item be acted on.
	for _, it := range view.EntityItems(typ, id, now) {
		if _, left := items[it.Reason.Code]; left {
			p.Reasons = append(p.Reasons, reasonData{Code: string(it.Reason.Code), Message: it.Reason.Summary, Todo: h.todo(it.Reason.Code),
				Fingerprint: it.Fingerprint, Hidden: hiddenText(it, now)})
		}
	}

	// The timeline: the latest TimelinePage transitions by default, or,
	// with ?after=SEQ, the API's paging from the oldest (seq > after).
	var rows []store.AuditRow
	base := entityHref(typ, id)
	if a := r.URL.Query().Get("after"); a != "" {
		after, err := strconv.ParseInt(a, 10, 64)
		if err != nil || after < 0 {
			h.notFound(w, r, "after "+strconv.Quote(a)+" is not a transition number")
			return
		}
		rows, err = h.o.Store.TransitionsAfter(ctx, typ, id, after, TimelinePage+1)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Paging, p.Latest = true, base
		if len(rows) > TimelinePage {
			rows = rows[:TimelinePage]
			p.Newer = base + "?after=" + strconv.FormatInt(rows[len(rows)-1].Seq, 10)
		}
	} else {
		var err error
		rows, p.Total, err = h.o.Store.LatestTransitions(ctx, typ, id, TimelinePage)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if p.Total > len(rows) {
			p.Older = base + "?after=0"
		}
	}
	// Newest first: what happened last is what an operator reads first.
	for i := len(rows) - 1; i >= 0; i-- {
		a := rows[i]
		tr := timelineRow{Seq: a.Seq, At: a.At.UTC().Format("2006-01-02 15:04:05Z"), Age: ago(now, a.At), To: a.To,
			Code: a.ReasonCode, Message: a.Message, Actor: a.Actor, Trigger: a.Trigger}
		if a.From != nil {
			tr.From = *a.From
		}
		p.Timeline = append(p.Timeline, tr)
	}
	h.render(w, r, http.StatusOK, "entity.html", p)
}

// hiddenText says how a dismissal hides it now, "" when it shows.
func hiddenText(it attention.Item, now time.Time) string {
	switch {
	case !it.Dismissed:
		return ""
	case it.SnoozedUntil.IsZero():
		return "dismissed"
	default:
		return "snoozed until " + it.SnoozedUntil.UTC().Format(state.StampLayout) + " (" + state.FormatAge(it.SnoozedUntil.Sub(now)) + " from now)"
	}
}

// runbookPage is GET /runbook: the runbook's reason-code sections, each
// under the anchors of its codes, as the page's links reach them.
func (h *Handler) runbookPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "runbook.html", struct {
		layout
		Sections []docs.Section
	}{h.frame(r, "runbook · watchdog", h.o.Now()), docs.Sections()})
}

// buildQueue groups the queue's items (already in the queue's order: most
// severe first) by severity, then by cluster in order of first
// appearance; todo says what to do about a code.
func buildQueue(q attention.Queue, now time.Time, todo func(state.ReasonCode) todoData) queueData {
	out := queueData{Total: q.Total}
	for _, sev := range attention.Severities {
		sec := severitySection{Severity: string(sev), Count: q.BySeverity[sev]}
		index := map[string]int{}
		for i := range q.Items {
			it := &q.Items[i]
			if it.Severity != sev {
				continue
			}
			k, ok := index[it.ClusterID]
			if !ok {
				k = len(sec.Clusters)
				index[it.ClusterID] = k
				sec.Clusters = append(sec.Clusters, clusterData{ID: it.ClusterID})
			}
			sec.Clusters[k].Items = append(sec.Clusters[k].Items, itemOf(it, now))
			sec.Clusters[k].items = append(sec.Clusters[k].items, *it)
		}
		for k := range sec.Clusters {
			c := &sec.Clusters[k]
			c.Header = attention.ClusterOf(c.items).Header(now)
			c.Todo = todo(c.items[0].Reason.Code)
			fps := make([]string, len(c.items))
			for i := range c.items {
				fps[i] = c.items[i].Fingerprint
			}
			b, _ := json.Marshal(fps) // strings: cannot fail
			c.Fingerprints = string(b)
		}
		if len(sec.Clusters) > 0 {
			out.Sections = append(out.Sections, sec)
		}
	}
	return out
}

func itemOf(it *attention.Item, now time.Time) itemData {
	v := itemData{
		Fingerprint: it.Fingerprint, Label: cmp.Or(it.Entity.Label, it.Entity.Type+"/"+it.Entity.ID), Type: it.Entity.Type,
		Age: ago(now, it.FirstSeenAt.Time), Summary: it.Reason.Summary, Status: it.Status, Heartbeat: it.HeartbeatText(now),
		Href: entityHref(it.Entity.Type, it.Entity.ID),
	}
	for _, a := range it.Actions {
		body, _ := json.Marshal(a.Body) // strings and numbers: cannot fail
		switch a.ID {
		case "snooze":
			v.SnoozeBody = string(body)
		case "dismiss":
			v.DismissBody = string(body)
		}
	}
	return v
}

// icons are the pills' icons, inline SVG drawn in the pill's colour
// (currentColor): no glyph a font may lack (⧗ was an empty box in
// Chromium with Debian's fonts). The pill never says anything by colour
// alone (the Session Status Vocabulary design: colour, icon and text
// together); its icons are the design's: an activity line for work in
// progress, a check, an x-circle, an hourglass, a stop square, a slash
// for cancelled, a dash for legacy.
var icons = map[string]template.HTML{
	"info":      svgIcon(`<path d="M1.5 8h3l2-5 3 10 2-5h3"/>`),
	"success":   svgIcon(`<path d="M3 8.5l3.2 3.2L13 4.8"/>`),
	"danger":    svgIcon(`<circle cx="8" cy="8" r="6.5"/><path d="M5.6 5.6l4.8 4.8M10.4 5.6l-4.8 4.8"/>`),
	"warning":   svgIcon(`<path d="M4 1.8h8M4 14.2h8M5 1.8v2.4L8 8l-3 3.8v2.4M11 1.8v2.4L8 8l3 3.8v2.4"/>`),
	"neutral":   svgIcon(`<rect x="3.5" y="3.5" width="9" height="9" rx="1.5"/>`),
	"cancelled": svgIcon(`<circle cx="8" cy="8" r="6.5"/><path d="M3.4 12.6l9.2-9.2"/>`),
	"legacy":    svgIcon(`<path d="M4 8h8"/>`),
}

func svgIcon(paths string) template.HTML {
	return template.HTML(`<svg class="pill-icon" data-testid="pill-icon" viewBox="0 0 16 16" width="11" height="11" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false">` + paths + `</svg>`) //nolint:gosec // constant markup
}

// pillsOf is the entity's compound state as the page's pills: the
// labels and tones are state's (state.StatePills), never re-derived here.
func pillsOf(e *wire.Entity) []pill {
	var out []pill
	for _, sp := range state.StatePills(e.State, state.ContractSubject(e.Artifacts)) {
		p := pill{Tone: string(sp.Tone), Text: sp.Label, Dimension: sp.Dimension}
		switch {
		case sp.Dimension == state.PillLifecycle && sp.Value == state.LifecycleLegacy:
			p.Tone, p.Text = "legacy", "legacy"
			p.Title = "Created before the current status vocabulary; excluded from live metrics, failure counts and the queue"
		case sp.Dimension == state.PillLifecycle:
			p.Title = "lifecycle " + sp.Value + "; the entity's severity is " + string(e.State.Severity)
		default:
			p.Title = sp.Dimension + " " + sp.Value
		}
		p.Icon = icons[p.Tone]
		if sp.Dimension == state.PillLifecycle && sp.Value == "cancelled" {
			p.Icon = icons["cancelled"]
		}
		out = append(out, p)
	}
	return out
}

// hostNames reads the hosts' names; a failed read shows the ids (and is
// logged): a name is a convenience, not worth failing the page for.
func (h *Handler) hostNames(ctx context.Context) map[string]string {
	names, err := h.o.Store.HostNames(ctx)
	if err != nil && ctx.Err() == nil {
		h.o.Log.Warn("reading the hosts' names", zap.Error(err))
	}
	return names
}

func rowOf(e *wire.Entity, hostNames map[string]string, now time.Time) entityRow {
	r := entityRow{Type: e.Type, ID: e.ID, Label: labelOf(e), Href: entityHref(e.Type, e.ID), Chain: e.Display,
		Host: cmp.Or(hostNames[e.HostID], e.HostID), HostID: e.HostID, Pills: pillsOf(e)}
	if e.PID != 0 {
		r.PID = strconv.Itoa(e.PID)
	}
	since := e.StartedAt.Time
	if since.IsZero() {
		since = e.CreatedAt.Time
	}
	r.Since = ago(now, since)
	// The heartbeat the judgement takes, file or posted: the page must not
	// read "–" above evidence naming a heartbeat file's fresh mtime.
	r.Heartbeat = ago(now, e.LastHeartbeat().Time)
	if e.Heartbeat != nil {
		r.HeartbeatSource = e.Heartbeat.Source
	}
	if e.ExitStatus != nil {
		r.Exit = e.ExitStatus.Short()
	}
	return r
}

func labelOf(e *wire.Entity) string {
	return cmp.Or(e.Label, e.Type+"/"+e.ID)
}

// entityHref is the entity page's path.
func entityHref(typ, id string) string {
	return "/entities/" + url.PathEscape(typ) + "/" + url.PathEscape(id)
}

// ago renders "12m ago" (state.FormatAge), "" for a zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return state.FormatAge(now.Sub(t)) + " ago"
}

// evidenceOf is one line of a reason's evidence: its kind and whatever
// names it, the detail last, cut at the moments it writes.
func evidenceOf(ev state.EvidenceRef, now time.Time) evidenceLine {
	parts := []string{ev.Kind}
	for _, s := range []string{ev.ID, ev.Path, ev.URL, ev.Repo, ev.CommitSHA, ev.SessionID, ev.MessageID, ev.ToolCallID, ev.ArtifactID, ev.ContentHash} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	head := strings.Join(parts, " · ")
	if ev.Detail == "" {
		return evidenceLine{{Text: head}}
	}
	line := evidenceLine{{Text: head + " · "}}
	rest := ev.Detail
	for _, t := range ev.Times {
		i := strings.Index(rest, t.Text)
		if t.Text == "" || t.At.IsZero() || i < 0 {
			continue // not written as said: the words stay as they are
		}
		if i > 0 {
			line = append(line, evidencePart{Text: rest[:i]})
		}
		at := t.At.UTC()
		age := ago(now, at)
		if at.After(now) {
			age = "in " + state.FormatAge(at.Sub(now))
		}
		line = append(line, evidencePart{Text: state.Stamp(at), At: at.Format(time.RFC3339Nano), Age: age})
		rest = rest[i+len(t.Text):]
	}
	if rest != "" {
		line = append(line, evidencePart{Text: rest})
	}
	return line
}

// FragmentHeader is the request header by which the script asks for a
// page's <main> alone (its value "main"): what it swaps in when the
// stream says something changed, without the frame around it.
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
	// A reason's message or a command's stderr in evidence may hold ESC,
	// BEL or OSC sequences: shown as text (\u001b), never sent raw.
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
