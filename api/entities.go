package api

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// register is POST /api/v1/entities: 201 created, 200 updated (lifecycle unchanged).
func (s *server) register(w http.ResponseWriter, r *http.Request) {
	var body wire.Register
	if err := wire.DecodeAt(r.Body, &body, false, s.Now()); err != nil {
		s.fail(w, r, err)
		return
	}
	reg, err := body.Registration(transitions.ActorOrchestrator)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	reg.Principal = CallerOf(r).Principal
	ctx := r.Context()
	created, err := s.Writer.Register(ctx, reg)
	if err != nil {
		if errors.Is(err, transitions.ErrUnknownType) {
			// The type is a field of the document, not a path: 422, not 404.
			writeError(w, http.StatusUnprocessableEntity, transitions.CauseUnknownType, err.Error())
			return
		}
		s.fail(w, r, err)
		return
	}
	typ, _ := transitions.CanonicalType(reg.Entity.Type)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	e, err := s.Store.Get(ctx, typ, reg.Entity.ID)
	if err != nil {
		// Registered: the read-back's failure must not say otherwise.
		mine := reg.Entity
		mine.Type = typ
		s.written(w, r, status, mine, err)
		return
	}
	writeJSON(w, status, wire.FromEntity(e, nil, s.Heartbeats, s.Now()))
}

// getEntity is GET /api/v1/entities/{type}/{id}, with its latest audit rows only.
func (s *server) getEntity(w http.ResponseWriter, r *http.Request) {
	typ, err := canonicalType(r.PathValue("type"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	ctx := r.Context()
	// Synced first so that a write just acknowledged, by anyone, is read back.
	if err := s.View.Sync(ctx); err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.Now()
	ent, ok := s.View.Get(typ, id, now)
	if !ok && !s.holdsAll() {
		// Not held by a fleet daemon (ADR-0056) or aged out (ADR-0060): the store's row.
		e, err := s.Store.Get(ctx, typ, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.fail(w, r, err)
			return
		}
		ent, ok = live.EntryOf(e, now), err == nil
	}
	if !ok {
		s.fail(w, r, fmt.Errorf("entity %s/%s: %w", typ, id, store.ErrNotFound))
		return
	}
	rows, total, err := s.Store.LatestTransitions(ctx, typ, id, wire.TransitionsInEntity)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := wire.FromDerived(ent.Entity, ent.State, rows, s.Heartbeats, s.Now())
	out.HostName = s.hostNames(ctx)[out.HostID]
	out.TransitionsTotal = &total
	out.Process = s.Processes.Of(&ent.Entity, s.Now())
	out.Leftovers = s.Processes.LeftoversOf(&ent.Entity, s.Now())
	writeJSON(w, http.StatusOK, out)
}

// getTransitions is GET …/{type}/{id}/transitions: audit rows after a seq, paged.
func (s *server) getTransitions(w http.ResponseWriter, r *http.Request) {
	typ, err := canonicalType(r.PathValue("type"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	q := r.URL.Query()
	after, err := queryInt(q.Get("after"), "after", 0, 0, math.MaxInt64)
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	limit, err := queryInt(q.Get("limit"), "limit", wire.DefaultTransitionsPage, 1, wire.MaxTransitionsPage)
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	// An unknown entity is 404, not an empty page.
	if _, err := s.Store.Get(ctx, typ, id); err != nil {
		s.fail(w, r, err)
		return
	}
	// One row more than asked tells whether another page follows.
	rows, err := s.Store.TransitionsAfter(ctx, typ, id, after, int(limit)+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := wire.TransitionPage{}
	if len(rows) > int(limit) {
		rows = rows[:limit]
		page.NextAfter = rows[len(rows)-1].Seq
	}
	page.Items = wire.FromAuditRows(rows)
	writeJSON(w, http.StatusOK, page)
}

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(v, name string, def, lo, hi int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %s is not a whole number from %d to %d", name, quote(v), lo, hi)
	}
	return n, nil
}

// listEntities is GET /api/v1/entities, paged by cursor (wire.ListOrder).
// process=true reads process facts now: that costs, so it is asked for.
func (s *server) listEntities(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	typ := q.Get("type")
	if typ != "" {
		canon, ok := transitions.CanonicalType(typ)
		if !ok {
			writeError(w, http.StatusBadRequest, causeBadRequest, fmt.Sprintf("type %s is not an entity type (known: %s)", quote(typ), strings.Join(transitions.Types(), ", ")))
			return
		}
		typ = canon
	}
	want, err := state.ParseSeverities(q.Get("severity"), state.Severities)
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, "severity "+err.Error())
		return
	}
	order, err := wire.ParseOrder(q.Get("order"))
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	limit, err := queryInt(q.Get("limit"), "limit", wire.DefaultEntitiesPage, 1, wire.MaxEntitiesPage)
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	withProcess := false
	if v := q.Get("process"); v != "" {
		if withProcess, err = strconv.ParseBool(v); err != nil {
			writeError(w, http.StatusBadRequest, causeBadRequest, fmt.Sprintf("process %s is not true or false", quote(v)))
			return
		}
	}
	var after *wire.ListKey
	if c := q.Get("after"); c != "" {
		k, err := wire.ParseCursor(c, order)
		if err != nil {
			writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
			return
		}
		after = &k
	}
	host, ok := s.resolveHost(w, r, q.Get("host"))
	if !ok {
		return
	}
	names := s.hostNames(r.Context())
	// A fleet daemon reads a scope it does not hold by index (ADR-0058).
	if s.fleet != nil {
		sq := store.ListQuery{ByID: order == wire.OrderID, Type: typ, Severities: want, Limit: int(limit)}
		if after != nil {
			sq.After = after.Store()
		}
		now := s.Now()
		res, ok, err := s.fleet.ListPage(r.Context(), host, host == "", sq, now)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if ok {
			pg := res.Entries
			more := len(pg) > int(limit)
			if more {
				pg = pg[:limit]
			}
			writeList(w, wire.EntityList{GeneratedAt: unixtime.Of(now), Total: res.Total}, len(pg), more,
				func(i int) wire.Entity { return s.listItem(pg[i].Entity, pg[i].State, withProcess, names) },
				func(i int) string {
					return wire.ListKeyOf(order, pg[i].State, pg[i].Entity.UpdatedAt, pg[i].Entity.Type, pg[i].Entity.ID).Cursor()
				})
			return
		}
	}
	view, err := s.readerFor(r.Context(), host)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.Now()
	items := selectListed(view, wire.EntityFilter{Type: typ, Severities: want, Host: host}, order, now)
	out := wire.EntityList{GeneratedAt: unixtime.Of(now), Total: len(items)}
	pg, next := page(items, after, int(limit))
	writeList(w, out, len(pg), next != "",
		func(i int) wire.Entity { return s.listItem(pg[i].ref.Entity(), pg[i].ns, withProcess, names) },
		func(i int) string { return pg[i].key.Cursor() })
}

// listItem is one entity of a list page in the wire shape.
func (s *server) listItem(e store.Entity, ns state.NormalizedState, withProcess bool, names map[string]string) wire.Entity {
	item := wire.FromDerived(e, ns, nil, s.Heartbeats, s.Now())
	item.HostName = names[item.HostID]
	if withProcess {
		item.Process = s.Processes.Of(&e, s.Now())
		item.Leftovers = s.Processes.LeftoversOf(&e, s.Now())
	}
	return item
}

// heartbeat is POST …/{type}/{id}/heartbeat: 200 with the entity.
func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) {
	typ, err := canonicalType(r.PathValue("type"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	var body wire.Heartbeat
	if err := wire.Decode(r.Body, &body, true); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := body.Check(); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	if p := CallerOf(r).Principal; !p.AnyUID() {
		// The owner never changes once registered: checked, then written.
		e, err := s.Store.Get(ctx, typ, id)
		if err == nil && !p.MayActOn(&e) {
			err = fmt.Errorf("%w: %s/%s is not one %s may heartbeat (its processes are another user's)", transitions.ErrForbidden, typ, id, p.Name)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	at := s.Now()
	if err := s.Store.RecordHeartbeat(ctx, typ, id, at, body.Progress); err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.Store.Get(ctx, typ, id)
	if err != nil {
		// Recorded: the read-back's failure must not say otherwise.
		s.written(w, r, http.StatusOK, store.Entity{Type: typ, ID: id, HeartbeatAt: at, HeartbeatProgress: body.Progress}, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.FromEntity(e, nil, s.Heartbeats, s.Now()))
}

// transition is POST …/{type}/{id}/transitions: the entity after it and "from".
func (s *server) transition(w http.ResponseWriter, r *http.Request) {
	typ, id := r.PathValue("type"), r.PathValue("id")
	var body wire.Transition
	if err := wire.DecodeAt(r.Body, &body, false, s.Now()); err != nil {
		s.rejected(typ, transitions.CauseInvalidInput)
		s.fail(w, r, err)
		return
	}
	caller := CallerOf(r)
	actor, err := transitions.ActorFor(body.Actor, "", caller.Principal, caller.Scopes.has(ScopeAdmin))
	if err != nil {
		s.rejected(typ, transitions.Cause(err))
		s.fail(w, r, err)
		return
	}
	req, err := body.Request(typ, id, actor)
	if err != nil {
		s.rejected(typ, transitions.CauseInvalidInput)
		s.fail(w, r, err)
		return
	}
	req.Principal = caller.Principal
	// The write path validates the rest and counts its own rejections.
	res, err := s.Writer.Transition(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.TransitionResult{Entity: wire.FromEntity(res.After, nil, s.Heartbeats, s.Now()), From: res.Before.LifecycleOr("")})
}

// rejected counts a transition refused before the write path saw it.
func (s *server) rejected(typ, cause string) {
	if s.Metrics != nil {
		s.Metrics.Rejected(typ, cause)
	}
}
