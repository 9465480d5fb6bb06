package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// register is POST /api/v1/entities: 201 with the entity when it was
// created, 200 when an existing one was updated (its lifecycle unchanged).
func (s *server) register(w http.ResponseWriter, r *http.Request) {
	var body wire.Register
	if err := wire.Decode(r.Body, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	reg, err := body.Registration(transitions.ActorOrchestrator)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	created, err := s.Writer.Register(ctx, reg)
	if err != nil {
		if errors.Is(err, transitions.ErrUnknownType) {
			// The type is a field of the document here, not a path: the
			// document is invalid, no resource is missing.
			writeError(w, http.StatusUnprocessableEntity, transitions.CauseUnknownType, err.Error())
			return
		}
		s.fail(w, r, err)
		return
	}
	typ, _ := transitions.CanonicalType(reg.Entity.Type)
	e, err := s.Store.Get(ctx, typ, reg.Entity.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, wire.FromEntity(e, nil, s.nowSeconds()))
}

// getEntity is GET /api/v1/entities/{type}/{id}: the entity read shape
// with its audit rows, oldest first.
func (s *server) getEntity(w http.ResponseWriter, r *http.Request) {
	typ, err := canonicalType(r.PathValue("type"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	ctx := r.Context()
	e, err := s.Store.Get(ctx, typ, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, err := s.Store.Transitions(ctx, typ, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.FromEntity(e, rows, s.nowSeconds()))
}

// listEntities is GET /api/v1/entities[?type=T][&severity=S,...]: every
// entity (without audit rows), most severe first, then most recently
// updated. A severity filter leaves legacy entities out, as they have no
// severity of their own.
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
	want, err := severityFilter(q.Get("severity"))
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, err.Error())
		return
	}
	list, err := s.Store.List(r.Context(), store.Filter{Type: typ})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := s.nowSeconds()
	out := wire.EntityList{GeneratedAt: now, Items: make([]wire.Entity, 0, len(list))}
	for _, e := range list {
		v := wire.FromEntity(e, nil, now)
		if want != nil && (v.State.Legacy() || !want[v.State.Severity]) {
			continue
		}
		out.Items = append(out.Items, v)
	}
	wire.SortEntities(out.Items)
	out.Total = len(out.Items)
	writeJSON(w, http.StatusOK, out)
}

// heartbeat is POST …/{type}/{id}/heartbeat with an empty body or
// {"progress": "..."}: 200 with the entity.
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
	if err := s.Store.RecordHeartbeat(ctx, typ, id, s.nowSeconds(), body.Progress); err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.Store.Get(ctx, typ, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.FromEntity(e, nil, s.nowSeconds()))
}

// transition is POST …/{type}/{id}/transitions: 200 with the entity as it
// is after the transition (audit rows are on GET).
func (s *server) transition(w http.ResponseWriter, r *http.Request) {
	typ, id := r.PathValue("type"), r.PathValue("id")
	var body wire.Transition
	if err := wire.Decode(r.Body, &body, false); err != nil {
		s.rejected(typ, transitions.CauseInvalidInput)
		s.fail(w, r, err)
		return
	}
	actor, err := s.actorFor(body.Actor)
	if err != nil {
		s.rejected(typ, transitions.CauseForbidden)
		s.fail(w, r, err)
		return
	}
	req, err := body.Request(typ, id, actor)
	if err != nil {
		s.rejected(typ, transitions.CauseInvalidInput)
		s.fail(w, r, err)
		return
	}
	// The write path validates everything else and counts its own
	// rejections.
	res, err := s.Writer.Transition(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.FromEntity(res.After, nil, s.nowSeconds()))
}

// rejected counts a transition the API refused before the write path saw
// it, so watchdog_transitions_rejected_total covers every refusal.
func (s *server) rejected(typ, cause string) {
	if s.Metrics != nil {
		s.Metrics.Rejected(typ, cause)
	}
}

// actorFor decides a transition's actor from the one the body claims (see
// the package doc): the reaper never over HTTP; with a token, the token's
// principal (orchestrator, or exec for the exec wrapper); without one,
// what the body says, orchestrator by default. An actor outside the
// vocabulary is left to the write path, which refuses it as invalid input.
func (s *server) actorFor(claimed string) (string, error) {
	if claimed == transitions.ActorReaper {
		return "", fmt.Errorf("%w: actor reaper is reserved for the daemon's own jobs", transitions.ErrForbidden)
	}
	if claimed == "" {
		return transitions.ActorOrchestrator, nil
	}
	if s.Token != "" && claimed == transitions.ActorAdmin {
		return "", fmt.Errorf("%w: with auth on the token decides the actor, and this token acts as orchestrator, not admin", transitions.ErrForbidden)
	}
	return claimed, nil
}
