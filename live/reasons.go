package live

import (
	"math"
	"time"
	"unique"

	"watchdog/state"
)

// reasonRec is a finding as a record keeps it (ADR-0052): an interned
// shape, its own times, and a tail (nil for most) for the rest.
type reasonRec struct {
	shape unique.Handle[reasonShape]
	// at is the first non-zero of first-seen, since and fetched-at; the
	// shape's slots say which times are at.
	at   micros
	tail *reasonTail
}

// reasonShape is what a finding shares with the same finding of other
// entities: its words and where its times are, not the times. Comparable.
type reasonShape struct {
	code        state.ReasonCode
	message     string
	claimStatus string
	entityType  string
	// entityID is set only when not the entity's own; ownID keeps the shape
	// shared by giving back the record's id.
	entityID string
	// kind and detail are the one piece of evidence's (evidence == evOne).
	kind, detail string
	// confidence is the float's bits: == on a float64 would make -0 the shape
	// of 0, and each NaN a shape of its own.
	confidence uint64
	ownID      bool
	evidence   evForm
	// Where since, first-seen and the one piece's fetched-at are.
	since, firstSeen, fetched slot
}

// evForm is the form of a reason's evidence.
type evForm uint8

const (
	evNil   evForm = iota // no list (nil)
	evEmpty               // an empty list
	evOne                 // one piece: its kind and detail in the shape, the rest in the tail
	evMany                // several: all in the tail, whole
)

// slot is where a reason's time is kept.
type slot uint8

const (
	slotZero slot = iota // the zero time
	slotAt               // reasonRec.at
	slotTail             // the tail's field of that time
)

// reasonTail is what a reason has of its own beyond its shape and at.
type reasonTail struct {
	// since, firstSeen and fetched: the times slotted here (slotTail).
	since, firstSeen, fetched micros
	// more is the one piece's ids, paths and times (evOne).
	more *evidenceMore
	// many is the evidence of several pieces (evMany).
	many []evidenceRec
}

// evidenceRec is one piece of evidence when there are several; the rare
// fields behind one pointer.
type evidenceRec struct {
	kind, detail string
	fetchedAt    micros
	more         *evidenceMore
}

// evidenceMore is the part of an EvidenceRef most leave empty.
type evidenceMore struct {
	id, sessionID, messageID, toolCallID, artifactID string
	path, url, repo, commitSHA, contentHash          string
	times                                            []state.EvidenceTime
}

// reasonsFit reports whether every time of rs fits micros exactly.
func reasonsFit(rs []state.StateReason) bool {
	for i := range rs {
		r := &rs[i]
		if !fits(r.Since.Time) || !fits(r.FirstSeen.Time) {
			return false
		}
		for j := range r.Evidence {
			if !fits(r.Evidence[j].FetchedAt.Time) {
				return false
			}
		}
	}
	return true
}

// reasonsOf is rs compact (nil stays nil, empty stays empty); id is the
// entity's own. The caller has checked reasonsFit.
func reasonsOf(rs []state.StateReason, id string) []reasonRec {
	if rs == nil {
		return nil
	}
	out := make([]reasonRec, len(rs))
	for i := range rs {
		out[i] = reasonOf(&rs[i], id)
	}
	return out
}

func reasonOf(r *state.StateReason, id string) reasonRec {
	s := reasonShape{
		code: r.Code, message: r.Message, claimStatus: r.ClaimStatus, entityType: r.EntityType,
		confidence: math.Float64bits(r.Confidence), ownID: r.EntityID == id && id != "",
	}
	if !s.ownID {
		s.entityID = r.EntityID
	}
	var c reasonRec
	var t reasonTail
	since, firstSeen, fetched := microsOf(r.Since.Time), microsOf(r.FirstSeen.Time), micros(0)
	switch len(r.Evidence) {
	case 0:
		s.evidence = evEmpty
		if r.Evidence == nil {
			s.evidence = evNil
		}
	case 1:
		e := &r.Evidence[0]
		s.evidence, s.kind, s.detail, fetched = evOne, e.Kind, e.Detail, microsOf(e.FetchedAt.Time)
		t.more = moreOf(e)
	default:
		s.evidence = evMany
		t.many = make([]evidenceRec, len(r.Evidence))
		for j := range r.Evidence {
			e := &r.Evidence[j]
			t.many[j] = evidenceRec{kind: e.Kind, detail: e.Detail, fetchedAt: microsOf(e.FetchedAt.Time), more: moreOf(e)}
		}
	}
	for _, m := range [...]micros{firstSeen, since, fetched} {
		if m != 0 {
			c.at = m
			break
		}
	}
	// place puts m in its slot: the tail's field when neither zero nor at.
	place := func(m micros, field *micros) slot {
		switch m {
		case 0:
			return slotZero
		case c.at:
			return slotAt
		}
		*field = m
		return slotTail
	}
	s.since, s.firstSeen, s.fetched = place(since, &t.since), place(firstSeen, &t.firstSeen), place(fetched, &t.fetched)
	if t.more != nil || t.many != nil || t.since != 0 || t.firstSeen != 0 || t.fetched != 0 {
		c.tail = &t
	}
	c.shape = unique.Make(s)
	return c
}

// moreOf is e's rarely set fields, nil when all are empty.
func moreOf(e *state.EvidenceRef) *evidenceMore {
	if e.Times == nil && e.ID == "" && e.SessionID == "" && e.MessageID == "" && e.ToolCallID == "" && e.ArtifactID == "" &&
		e.Path == "" && e.URL == "" && e.Repo == "" && e.CommitSHA == "" && e.ContentHash == "" {
		return nil
	}
	return &evidenceMore{
		id: e.ID, sessionID: e.SessionID, messageID: e.MessageID, toolCallID: e.ToolCallID, artifactID: e.ArtifactID,
		path: e.Path, url: e.URL, repo: e.Repo, commitSHA: e.CommitSHA, contentHash: e.ContentHash, times: e.Times,
	}
}

// stateReasons rebuilds the reasons reasonsOf made compact, in a new slice
// each call (a reader may change its copy).
func stateReasons(cs []reasonRec, id string) []state.StateReason {
	if cs == nil {
		return nil
	}
	out := make([]state.StateReason, len(cs))
	for i := range cs {
		out[i] = cs[i].reason(id)
	}
	return out
}

func (c *reasonRec) reason(id string) state.StateReason {
	s := c.shape.Value()
	r := state.StateReason{
		Code: s.code, Message: s.message, ClaimStatus: s.claimStatus, Confidence: math.Float64frombits(s.confidence),
		EntityType: s.entityType, EntityID: s.entityID,
	}
	if s.ownID {
		r.EntityID = id
	}
	var t reasonTail
	if c.tail != nil {
		t = *c.tail
	}
	r.Since.Time, r.FirstSeen.Time = c.timeIn(s.since, t.since), c.timeIn(s.firstSeen, t.firstSeen)
	switch s.evidence {
	case evEmpty:
		r.Evidence = []state.EvidenceRef{}
	case evOne:
		e := evidenceRec{kind: s.kind, detail: s.detail, more: t.more}
		r.Evidence = []state.EvidenceRef{e.ref(c.timeIn(s.fetched, t.fetched))}
	case evMany:
		r.Evidence = make([]state.EvidenceRef, len(t.many))
		for j := range t.many {
			r.Evidence[j] = t.many[j].ref(t.many[j].fetchedAt.time())
		}
	}
	return r
}

func (c *reasonRec) timeIn(s slot, inTail micros) time.Time {
	switch s {
	case slotAt:
		return c.at.time()
	case slotTail:
		return inTail.time()
	}
	return time.Time{}
}

func (c *reasonRec) code() state.ReasonCode { return c.shape.Value().code }

// eachMore calls fn with each evidence piece's rare fields, if any.
func (c *reasonRec) eachMore(fn func(*evidenceMore)) {
	if c.tail == nil {
		return
	}
	if c.tail.more != nil {
		fn(c.tail.more)
	}
	for j := range c.tail.many {
		if m := c.tail.many[j].more; m != nil {
			fn(m)
		}
	}
}

func (c *evidenceRec) ref(fetchedAt time.Time) state.EvidenceRef {
	e := state.EvidenceRef{Kind: c.kind, Detail: c.detail}
	e.FetchedAt.Time = fetchedAt
	if m := c.more; m != nil {
		e.ID, e.SessionID, e.MessageID, e.ToolCallID, e.ArtifactID = m.id, m.sessionID, m.messageID, m.toolCallID, m.artifactID
		e.Path, e.URL, e.Repo, e.CommitSHA, e.ContentHash, e.Times = m.path, m.url, m.repo, m.commitSHA, m.contentHash, m.times
	}
	return e
}
