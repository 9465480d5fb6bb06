package live

import (
	"encoding/json"
	"time"
	"unique"

	"watchdog/attention"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// micros is a time as Unix microseconds (0: zero), exact for stored times.
type micros int64

func microsOf(t time.Time) micros {
	if t.IsZero() {
		return 0
	}
	return micros(t.UnixMicro())
}

func (m micros) time() time.Time {
	if m == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(m))
}

// fits reports whether t comes back from microsOf exactly, location included.
func fits(t time.Time) bool { return microsOf(t).time() == t }

// record is what the view keeps of one entity; a read rebuilds the entity
// and its Entry from it (ADR-0042).
type record struct {
	id        string
	lifecycle *string
	// words: one shared copy per combination, reclaimed when none holds it.
	words unique.Handle[recWords]

	body body
	// odd holds a health, delivery, severity or tone none of the known ones.
	odd *oddWords

	// items are the bare attention items; codes carry the index's ids.
	items []attention.Item
	codes []codeRef
	// The small fields last, together: each byte past the size class costs
	// every entity a class (ADR-0052).
	// Places in state.Healths, Deliveries, Severities and Tones, or odd.
	health, delivery, sev, tone uint8
	terminal                    bool
	// ended: the derived state has an outcome.
	ended bool
	// lingers is attention.Lingers: an outcome that never ages out while it lasts.
	lingers bool
	// packed: the record is a copy in a slab (compact.go).
	packed bool
}

// recWords are the words a record shares with many others (unique.Make).
type recWords struct {
	typ, host, boot, display string
	// owner is the registering principal and its proven uid.
	owner       string
	ownerUID    int
	hasOwnerUID bool
}

func (r *record) typ() string { return r.words.Value().typ }

func (r *record) host() string { return r.words.Value().host }

func (r *record) display() string { return r.words.Value().display }

// body is the rest of an entity, compact; rare fields behind one pointer.
type body struct {
	named *named
	// reasons: the transition reason (when hasTransition), then the findings.
	reasons       []reasonRec
	lastSeq       int64
	revision      int64
	pidStartTicks uint64

	healthSince, pidStart, heartbeatAt                micros
	startedAt, endedAt, lifecycleAt, createdAt, updAt micros

	rare *rareFields
	// pid: a Linux pid fits 32 bits; one that does not keeps the entity whole.
	pid int32
	// noMetadata is a nil Metadata; any other is "{}" unless rare holds it.
	noMetadata bool
	// findingsNil: the findings were nil, not empty (reasons cannot say).
	hasTransition, findingsNil bool
}

// named is behind a pointer: inline, it cost every record a size class.
type named struct {
	label, heartbeatFile string
}

// codeRef is a reason code and the index's id of its (code, severity, host).
type codeRef struct {
	code state.ReasonCode
	id   int32
}

// odd is the place of a word none of the known ones; rareFields keep it.
const odd = 255

func place[T comparable](list []T, v T) uint8 {
	for i, w := range list {
		if w == v {
			return uint8(i)
		}
	}
	return odd
}

func (r *record) healthOf() state.Health {
	if r.health == odd {
		return r.odd.health
	}
	return state.Healths[r.health]
}

func (r *record) deliveryOf() state.Delivery {
	if r.delivery == odd {
		return r.odd.delivery
	}
	return state.Deliveries[r.delivery]
}

func (r *record) severity() state.Severity {
	if r.sev == odd {
		return r.odd.severity
	}
	return state.Severities[r.sev]
}

func (r *record) toneOf() state.Tone {
	if r.tone == odd {
		return r.odd.tone
	}
	return state.Tones[r.tone]
}

// oddWords keep unknown words (a hand-edited row, a newer daemon's) as is.
type oddWords struct {
	health   state.Health
	delivery state.Delivery
	severity state.Severity
	tone     state.Tone
}

// rareFields are the fields most entities leave empty; whole keeps an
// entity whose times micros would not give back exactly.
type rareFields struct {
	whole *store.Entity
	// reasons: the findings as decoded, when wholeReasons.
	reasons      []state.StateReason
	wholeReasons bool

	deadSince, supervisorStart, scheduleLastFired time.Time
	supervisorPID                                 int
	heartbeatProgress                             string
	timeout, timeoutElapsed                       time.Duration
	artifactsRoot                                 string
	artifacts                                     []state.ArtifactSpec
	lockFiles                                     []string
	parentType, parentID                          string
	dependsOn                                     []string
	scheduleCron                                  string
	metadata                                      json.RawMessage
	exit                                          *state.ExitStatus
}

func (r *rareFields) empty() bool {
	return r.whole == nil && !r.wholeReasons && r.deadSince.IsZero() && r.supervisorStart.IsZero() && r.scheduleLastFired.IsZero() &&
		r.supervisorPID == 0 && r.heartbeatProgress == "" && r.timeout == 0 && r.timeoutElapsed == 0 &&
		r.artifactsRoot == "" && r.artifacts == nil && r.lockFiles == nil && r.parentType == "" && r.parentID == "" &&
		r.dependsOn == nil && r.scheduleCron == "" && r.metadata == nil && r.exit == nil
}

// emptyMetadata is the one shared "{}".
var emptyMetadata = json.RawMessage("{}")

// newRecord derives e's record at the change; e is the view's own copy.
func newRecord(e *store.Entity, at time.Time) *record {
	d := Derive(*e, at)
	r := &record{
		id: e.ID, lifecycle: e.Lifecycle,
		words: unique.Make(recWords{typ: e.Type, host: e.HostID, boot: e.BootID, display: d.Display,
			owner: e.Owner, ownerUID: e.OwnerUID, hasOwnerUID: e.HasOwnerUID}),
		health: place(state.Healths, e.Health), delivery: place(state.Deliveries, e.Delivery),
		sev: place(state.Severities, d.State.Severity), tone: place(state.Tones, d.State.Tone),
		ended: d.State.Outcome != "", items: d.Items, terminal: e.Terminal,
		lingers: attention.Lingers(d.State.Outcome, e.Health),
	}
	if r.health == odd || r.delivery == odd || r.sev == odd || r.tone == odd {
		r.odd = &oddWords{health: e.Health, delivery: e.Delivery, severity: d.State.Severity, tone: d.State.Tone}
	}
	if len(d.Codes) > 0 {
		r.codes = make([]codeRef, len(d.Codes))
		for i, c := range d.Codes {
			r.codes[i] = codeRef{code: c, id: -1}
		}
	}
	for i := range r.items {
		r.items[i] = r.items[i].Bare()
	}
	r.body = newBody(e)
	return r
}

func newBody(e *store.Entity) body {
	b := body{
		lastSeq: e.LastSeq, revision: e.Revision, pid: int32(e.PID), pidStartTicks: e.PIDStartTicks,
		healthSince: microsOf(e.HealthSince), pidStart: microsOf(e.PIDStartTime), heartbeatAt: microsOf(e.HeartbeatAt),
		startedAt: microsOf(e.StartedAt), endedAt: microsOf(e.EndedAt), lifecycleAt: microsOf(e.LifecycleAt),
		createdAt: microsOf(e.CreatedAt), updAt: microsOf(e.UpdatedAt),
	}
	rare := &rareFields{
		deadSince: e.DeadSince, supervisorStart: e.SupervisorStartTime, scheduleLastFired: e.ScheduleLastFiredAt,
		supervisorPID: e.SupervisorPID, heartbeatProgress: e.HeartbeatProgress, timeout: e.Timeout, timeoutElapsed: e.TimeoutElapsed,
		artifactsRoot: e.ArtifactsRoot, artifacts: e.Artifacts, lockFiles: e.LockFiles, parentType: e.ParentType, parentID: e.ParentID,
		dependsOn: e.DependsOn, scheduleCron: e.ScheduleCron, exit: e.Exit,
	}
	if e.Label != "" || e.HeartbeatFile != "" {
		b.named = &named{label: e.Label, heartbeatFile: e.HeartbeatFile}
	}
	findingsFit := reasonsFit(e.Reasons)
	if !findingsFit {
		rare.reasons, rare.wholeReasons = e.Reasons, true
	}
	if t := e.TransitionReason; t != nil {
		// One slice for transition and findings: a pointer would cost every record 8 bytes.
		b.hasTransition, b.findingsNil = true, e.Reasons == nil
		n := 1
		if findingsFit {
			n += len(e.Reasons)
		}
		b.reasons = make([]reasonRec, 0, n)
		b.reasons = append(b.reasons, reasonOf(t, e.ID))
		if findingsFit {
			for i := range e.Reasons {
				b.reasons = append(b.reasons, reasonOf(&e.Reasons[i], e.ID))
			}
		}
	} else if findingsFit {
		b.reasons = reasonsOf(e.Reasons, e.ID)
	}
	switch {
	case e.Metadata == nil:
		b.noMetadata = true
	case string(e.Metadata) != "{}":
		rare.metadata = e.Metadata
	}
	if !(fits(e.HealthSince) && fits(e.PIDStartTime) && fits(e.HeartbeatAt) && fits(e.StartedAt) && fits(e.EndedAt) &&
		fits(e.LifecycleAt) && fits(e.CreatedAt) && fits(e.UpdatedAt)) || int(b.pid) != e.PID ||
		(e.TransitionReason != nil && !reasonsFit([]state.StateReason{*e.TransitionReason})) {
		whole := *e
		rare.whole = &whole
	}
	if !rare.empty() {
		b.rare = rare
	}
	return b
}

func (r *record) entity() store.Entity {
	b := &r.body
	if b.rare != nil && b.rare.whole != nil {
		return *b.rare.whole
	}
	w := r.words.Value()
	e := store.Entity{
		Type: w.typ, ID: r.id, Lifecycle: r.lifecycle, Terminal: r.terminal, LastSeq: b.lastSeq,
		Health: r.healthOf(), Delivery: r.deliveryOf(), Reasons: stateReasons(b.findings(), r.id),
		HealthSince: b.healthSince.time(), HostID: w.host, BootID: w.boot, PID: int(b.pid), PIDStartTime: b.pidStart.time(),
		PIDStartTicks: b.pidStartTicks, HeartbeatAt: b.heartbeatAt.time(),
		StartedAt: b.startedAt.time(), EndedAt: b.endedAt.time(), LifecycleAt: b.lifecycleAt.time(),
		CreatedAt: b.createdAt.time(), UpdatedAt: b.updAt.time(), Revision: b.revision,
		Owner: w.owner, OwnerUID: w.ownerUID, HasOwnerUID: w.hasOwnerUID,
	}
	if b.named != nil {
		e.Label, e.HeartbeatFile = b.named.label, b.named.heartbeatFile
	}
	if b.hasTransition {
		t := b.reasons[0].reason(r.id)
		e.TransitionReason = &t
	}
	if !b.noMetadata {
		// The one shared "{}", clipped: a reader's append copies.
		e.Metadata = emptyMetadata[:len(emptyMetadata):len(emptyMetadata)]
	}
	if x := b.rare; x != nil {
		e.DeadSince, e.SupervisorStartTime, e.ScheduleLastFiredAt = x.deadSince, x.supervisorStart, x.scheduleLastFired
		e.SupervisorPID, e.HeartbeatProgress, e.Timeout, e.TimeoutElapsed = x.supervisorPID, x.heartbeatProgress, x.timeout, x.timeoutElapsed
		e.ArtifactsRoot, e.Artifacts, e.LockFiles = x.artifactsRoot, x.artifacts, x.lockFiles
		e.ParentType, e.ParentID, e.DependsOn = x.parentType, x.parentID, x.dependsOn
		e.ScheduleCron, e.Exit = x.scheduleCron, x.exit
		if x.metadata != nil {
			e.Metadata = x.metadata
		}
		if x.wholeReasons {
			e.Reasons = x.reasons
		}
	}
	return e
}

// findings are the findings alone: nil when nil or kept whole in rare.
func (b *body) findings() []reasonRec {
	if !b.hasTransition {
		return b.reasons
	}
	if b.findingsNil || (b.rare != nil && b.rare.wholeReasons) {
		return nil
	}
	return b.reasons[1:]
}

// entry rebuilds the record's Entry, Normalize's state computed at now.
func (r *record) entry(now time.Time) Entry {
	e := r.entity()
	ns := transitions.Normalize(e, now)
	ns.EvaluatedAt.Time = now
	var codes []state.ReasonCode
	if len(r.codes) > 0 {
		codes = make([]state.ReasonCode, len(r.codes))
		for i, c := range r.codes {
			codes[i] = c.code
		}
	}
	return Entry{
		Entity:  e,
		Derived: Derived{State: ns, Display: r.display(), Items: r.items, Codes: codes},
		arrived: r.arrival(), lingers: r.lingers, rec: r,
	}
}

func (r *record) legacy() bool { return r.lifecycle == nil }

func (r *record) open() bool { return !r.legacy() && !r.terminal }

func (r *record) arrival() time.Time { return r.arrivedAt().time() }

// arrivedAt is attention.Arrived from the body's (or whole entity's) times.
func (r *record) arrivedAt() micros {
	b := &r.body
	if b.rare != nil && b.rare.whole != nil {
		w := b.rare.whole
		return microsOf(attention.Arrived(w.EndedAt, w.LifecycleAt, w.UpdatedAt))
	}
	switch {
	case b.endedAt != 0:
		return b.endedAt
	case b.lifecycleAt != 0:
		return b.lifecycleAt
	}
	return b.updAt
}

func (r *record) lifecycleOr(def string) string {
	if r.lifecycle == nil {
		return def
	}
	return *r.lifecycle
}
