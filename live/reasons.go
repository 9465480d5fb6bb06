package live

import (
	"math"
	"time"
	"unique"

	"watchdog/state"
)

// reasonRec is a finding as a record keeps it (ADR-0052): a handle to its
// shape, the words nearly every entity's finding shares, interned
// (unique.Make: a shape no record holds any more is reclaimed, where a
// bounded table would either grow without end or stop sharing), and what
// is the entity's own: its times, and behind tail, nil for most, what
// the shape's slots do not cover. A StateReason with one piece of
// evidence is 160 + 256 bytes, the compact form of ADR-0052's first step
// was 128 + 48; the common finding (run.health.liveness_unknown: one
// piece of evidence fetched when the finding was first seen, no moment)
// is 24. The record rebuilds the StateReason exactly (reasonsOf,
// stateReasons); a reason whose times microseconds would not give back
// keeps the entity's reasons whole instead.
type reasonRec struct {
	shape unique.Handle[reasonShape]
	// at is the reason's first time that is not zero (first-seen, else
	// since, else the one piece's fetched-at); the shape's slots say which
	// of its times are at.
	at   micros
	tail *reasonTail
}

// reasonShape is what a finding shares with the same finding of other
// entities: its words, and where each of its times is (slots), not the
// times themselves. Comparable, for unique.Make.
type reasonShape struct {
	code        state.ReasonCode
	message     string
	claimStatus string
	entityType  string
	// entityID is the reason's entity id when it is not its entity's own;
	// ownID says it is (the interner made it that very string), so the
	// record's id is given back and the shape stays shared.
	entityID string
	// kind and detail are the one piece of evidence's (evidence == evOne).
	kind, detail string
	// confidence is the float's bits: == on a float64 would make -0 the
	// shape of 0, and a NaN a shape of its own at each Make.
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

// reasonTail is what a reason has of its own beyond its shape and at:
// nil for the common finding.
type reasonTail struct {
	// since, firstSeen and fetched are the times the shape's slots place
	// here (slotTail); the others are zero.
	since, firstSeen, fetched micros
	// more is the one piece's ids, paths and times (evOne).
	more *evidenceMore
	// many is the evidence of several pieces (evMany).
	many []evidenceRec
}

// evidenceRec is one piece of a reason's evidence when it has several:
// its kind, its detail and when it was fetched, and the rest (ids, paths,
// the detail's times) behind one pointer, nil for most.
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

// reasonsFit reports whether every time of rs comes back from micros
// exactly: then reasonsOf keeps them compact.
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

// reasonsOf is rs compact (nil stays nil, empty stays empty): id is the
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

// reasonOf is r compact.
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
	// place puts m in its slot: the tail's field when it is neither zero
	// nor at.
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

// stateReasons rebuilds the reasons reasonsOf made compact (id is the
// entity's own): a new slice each call (a reader may change its copy).
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

// reason rebuilds the StateReason c was made of.
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

// timeIn is the time kept in slot s (inTail the tail's field of it).
func (c *reasonRec) timeIn(s slot, inTail micros) time.Time {
	switch s {
	case slotAt:
		return c.at.time()
	case slotTail:
		return inTail.time()
	}
	return time.Time{}
}

// code is the reason's code.
func (c *reasonRec) code() state.ReasonCode { return c.shape.Value().code }

// eachMore calls fn with the rarely set fields of each piece of the
// reason's evidence that has them.
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
