package live

import "watchdog/state"

// reasonRec is a reason (a finding, or the transition's) as a record
// keeps it (ADR-0052): its words interned as the feed's apply left them,
// its times as Unix microseconds, its evidence compact. A StateReason
// with one piece of evidence is 160 + 256 bytes, the evidence's eleven
// strings mostly empty; a reasonRec with its evidenceRec is 128 + 48.
// The record rebuilds the StateReason exactly (reasonsOf, stateReasons);
// a reason whose times microseconds would not give back keeps the
// entity's reasons whole instead.
type reasonRec struct {
	code        state.ReasonCode
	message     string
	claimStatus string
	entityType  string
	entityID    string
	confidence  float64
	evidence    []evidenceRec
	since       micros
	firstSeen   micros
}

// evidenceRec is one piece of a reason's evidence: its kind, its detail
// and when it was fetched, and the rest (ids, paths, the detail's
// times) behind one pointer, nil for most.
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

// reasonsOf is rs compact (nil stays nil, empty stays empty); the caller
// has checked reasonsFit.
func reasonsOf(rs []state.StateReason) []reasonRec {
	if rs == nil {
		return nil
	}
	out := make([]reasonRec, len(rs))
	for i := range rs {
		r := &rs[i]
		c := reasonRec{
			code: r.Code, message: r.Message, claimStatus: r.ClaimStatus, entityType: r.EntityType, entityID: r.EntityID,
			confidence: r.Confidence, since: microsOf(r.Since.Time), firstSeen: microsOf(r.FirstSeen.Time),
		}
		if r.Evidence != nil {
			c.evidence = make([]evidenceRec, len(r.Evidence))
			for j := range r.Evidence {
				c.evidence[j] = evidenceOf(&r.Evidence[j])
			}
		}
		out[i] = c
	}
	return out
}

func evidenceOf(e *state.EvidenceRef) evidenceRec {
	c := evidenceRec{kind: e.Kind, detail: e.Detail, fetchedAt: microsOf(e.FetchedAt.Time)}
	m := evidenceMore{
		id: e.ID, sessionID: e.SessionID, messageID: e.MessageID, toolCallID: e.ToolCallID, artifactID: e.ArtifactID,
		path: e.Path, url: e.URL, repo: e.Repo, commitSHA: e.CommitSHA, contentHash: e.ContentHash, times: e.Times,
	}
	if m.times != nil || m.id != "" || m.sessionID != "" || m.messageID != "" || m.toolCallID != "" || m.artifactID != "" ||
		m.path != "" || m.url != "" || m.repo != "" || m.commitSHA != "" || m.contentHash != "" {
		c.more = &m
	}
	return c
}

// stateReasons rebuilds the reasons reasonsOf made compact: a new slice
// each call (a reader may change its copy).
func stateReasons(cs []reasonRec) []state.StateReason {
	if cs == nil {
		return nil
	}
	out := make([]state.StateReason, len(cs))
	for i := range cs {
		c := &cs[i]
		r := state.StateReason{
			Code: c.code, Message: c.message, ClaimStatus: c.claimStatus, Confidence: c.confidence,
			EntityType: c.entityType, EntityID: c.entityID,
		}
		r.Since.Time, r.FirstSeen.Time = c.since.time(), c.firstSeen.time()
		if c.evidence != nil {
			r.Evidence = make([]state.EvidenceRef, len(c.evidence))
			for j := range c.evidence {
				r.Evidence[j] = c.evidence[j].ref()
			}
		}
		out[i] = r
	}
	return out
}

func (c *evidenceRec) ref() state.EvidenceRef {
	e := state.EvidenceRef{Kind: c.kind, Detail: c.detail}
	e.FetchedAt.Time = c.fetchedAt.time()
	if m := c.more; m != nil {
		e.ID, e.SessionID, e.MessageID, e.ToolCallID, e.ArtifactID = m.id, m.sessionID, m.messageID, m.toolCallID, m.artifactID
		e.Path, e.URL, e.Repo, e.CommitSHA, e.ContentHash, e.Times = m.path, m.url, m.repo, m.commitSHA, m.contentHash, m.times
	}
	return e
}
