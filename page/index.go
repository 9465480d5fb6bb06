package page

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"watchdog/attention"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// indexPage is GET /.
type indexPage struct {
	layout
	Queue    queueData
	Filter   filterData
	Entities []entityRow
	// Shown is this page's row count, First its first row's position, Total the selection's.
	Shown, First, Total int
	// Next and FirstPage link the table's next and first pages ("" when none).
	Next, FirstPage string
	Legacy          int
	FilterErr       string
}

// Last is the position of the page's last row.
func (p indexPage) Last() int { return p.First + p.Shown - 1 }

type filterData struct {
	Type, Severity, Host string
	// Order is the table's order (one of Orders).
	Order      string
	Types      []string
	Severities []string
	Orders     []wire.ListOrder
	Hosts      []hostOption
}

// hostOption is a host the filter offers: its id and its name.
type hostOption struct{ ID, Name string }

// Active reports whether any filter is set.
func (f filterData) Active() bool { return f.Type != "" || f.Severity != "" || f.Host != "" }

// fleetView is what the page reads, synced: the live view, or on a fleet
// daemon every host's read from the store now (ADR-0056).
func (h *Handler) fleetView(ctx context.Context) (LiveReader, error) {
	if h.fleet != nil {
		return h.fleet.For(ctx, "", true)
	}
	return h.o.View, h.o.View.Sync(ctx)
}

func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := indexPage{}
	// Parameters are checked before anything is read: a bad one is a 400.
	f := filterData{Type: q.Get("type"), Severity: q.Get("severity"), Host: q.Get("host"), Order: q.Get("order"), Types: transitions.Types(), Orders: wire.ListOrders}
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
	order, err := wire.ParseOrder(f.Order)
	if err != nil {
		fail(err.Error())
		order = wire.OrderSeverity
	}
	f.Order = string(order)
	var after *wire.ListKey
	if c := q.Get("after"); c != "" && p.FilterErr == "" {
		k, err := wire.ParseCursor(c, order)
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
		id, err := wire.ResolveHost(f.Host, h.hostNames(r.Context()))
		if err != nil {
			fail("host: " + err.Error())
		}
		f.Host = cmp.Or(id, f.Host)
	}

	// A fleet daemon reads every host's entities by index (ADR-0058).
	var (
		view       LiveReader
		byIndex    bool
		listed     live.ListResult
		scopeHosts []string
		legacy     int
	)
	if v := h.fleet; v != nil && !v.Complete("", true) {
		hs, n, ok, err := v.Scope(r.Context(), f.Type)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if ok && p.FilterErr == "" {
			// Stale rows that cannot be written back (a full store) fall back to a view.
			sq := store.ListQuery{ByID: order == wire.OrderID, Type: f.Type, Severities: sev, Limit: TablePage}
			if after != nil {
				sq.After = after.Store()
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
			view, byIndex, scopeHosts, legacy = qv, true, hs, n
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
	if p.FilterErr == "" && byIndex {
		res := listed
		next := ""
		if len(res.Entries) > TablePage {
			res.Entries = res.Entries[:TablePage]
			l := &res.Entries[TablePage-1]
			next = wire.ListKeyOf(order, l.State, l.Entity.UpdatedAt, l.Entity.Type, l.Entity.ID).Cursor()
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
		sel := wire.EntityFilter{Type: f.Type, Severities: sev, Host: f.Host}
		pg := pageOf{limit: TablePage, after: after}
		view.Each(f.Type, func(e *live.Entry) {
			if e.Entity.HostID != "" {
				hosts[e.Entity.HostID] = true
			}
			if !sel.Keeps(&e.Entity, e.State) {
				return
			}
			pg.add(row{key: wire.ListKeyOf(order, e.State, e.Entity.UpdatedAt, e.Entity.Type, e.Entity.ID), ref: e.Ref(), ns: e.State})
		})
		rows, next := pg.page()
		p.Total, p.First = pg.total, pg.before+1
		names := h.hostNames(r.Context())
		for host := range hosts {
			p.Filter.Hosts = append(p.Filter.Hosts, hostOption{ID: host, Name: names[host]})
		}
		slices.SortFunc(p.Filter.Hosts, func(a, b hostOption) int { return cmp.Compare(a.ID, b.ID) })
		for _, rw := range rows {
			// Only the page's rows are rebuilt and stat'ed, never under the view's lock.
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

// links sets the table's links to the next page and, past the first, to the first.
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
