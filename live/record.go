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

// micros is a time as the view keeps it: Unix microseconds, 0 for the
// zero time. The store keeps times to the microsecond
// (unixtime.Precision) and never keeps the Unix epoch itself (0 seconds
// is "not recorded"), so a stored time comes back from it exactly
// (fits checks that).
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

// fits reports whether t comes back from microsOf exactly: location,
// precision and all (== on time.Time compares them).
func fits(t time.Time) bool { return microsOf(t).time() == t }

// record is what the view keeps of one entity: the fields the index and
// the counts read, the parts of its derived state they read, and the rest
// of the entity compact (body: times as Unix microseconds, the rare
// fields behind one pointer). What a reader wants whole (the entity, its
// normalized state) is rebuilt from it (entity, entry): a record with its
// body is under 400 bytes where the entry it replaces was 1,024
// (ADR-0042). No hook's copy is held: the daemon's monitor keeps a
// compact state of its own and reads the entity from the view
// (View.Entity).
type record struct {
	// What the index and the counts read of the entity itself: its id,
	// its lifecycle (interned), and behind words its type and host (typ,
	// host; display is the derived state's).
	id        string
	lifecycle *string
	// words are the entity's type, host and boot and its display, one
	// shared copy of each combination (unique.Make: 8 bytes where the four
	// strings were 64; a combination no record holds any more is
	// reclaimed, as a host's old boots are). The record is 232 bytes,
	// in the 240 size class, where it was 288 (issue 25).
	words unique.Handle[recWords]

	// The rest of the entity, compact.
	body body
	// odd holds a health, delivery, severity or tone none of the known
	// ones (health, delivery, sev, tone).
	odd *oddWords

	// The derived state's parts the view reads (the rest, Normalize's
	// state, is rebuilt by a read); its display is in words.
	//
	// items are the entity's attention items, bare (Item.Bare); codes
	// its reason codes (Derived.Codes), each with the index's number of
	// its (code, severity, host), set by the index before any reader can
	// see the record.
	items []attention.Item
	codes []codeRef
	// The small fields last, together (no padding between them): each
	// byte past the size class costs every entity a class (ADR-0052).
	//
	// health and delivery are the entity's, sev and tone the state's
	// severity and tone, as their places in state.Healths,
	// state.Deliveries, state.Severities and state.Tones.
	health, delivery, sev, tone uint8
	terminal                    bool
	// ended is whether the derived state has an outcome (the entity
	// ended): all the view reads of it.
	ended bool
	// lingers is attention.Lingers: an outcome that never ages out while
	// it lasts (an orphan whose process lives), counted like an open
	// entity's items.
	lingers bool
	// packed is whether the record is a copy in a slab (compact.go): its
	// slot dies with it while the slab lives on.
	packed bool
}

// recWords are the words a record shares with many others: its entity's
// type, host and boot id, and its derived display. Comparable, for
// unique.Make.
type recWords struct {
	typ, host, boot, display string
	// owner is the registering principal and its proven uid (issue 36):
	// shared by an owner's entities, as the rest of the words are.
	owner       string
	ownerUID    int
	hasOwnerUID bool
}

// typ is the entity's type.
func (r *record) typ() string { return r.words.Value().typ }

// host is the entity's host.
func (r *record) host() string { return r.words.Value().host }

// display is the entity's display chain (Derived.Display).
func (r *record) display() string { return r.words.Value().display }

// body is the rest of an entity the view keeps compact: its times as Unix
// microseconds, its rare fields behind one pointer (nil for most).
type body struct {
	// named holds the label and the heartbeat file, nil when the entity
	// has neither (as the bench's sessions, and many a job).
	named *named
	// reasons are the entity's transition reason (first, when
	// hasTransition) and its findings, compact (reasonRec); rare keeps the
	// findings whole instead when their times would not come back exactly
	// (the transition's then keep the entity whole).
	reasons       []reasonRec
	lastSeq       int64
	revision      int64
	pidStartTicks uint64

	healthSince, pidStart, heartbeatAt                micros
	startedAt, endedAt, lifecycleAt, createdAt, updAt micros

	rare *rareFields
	// pid is the entity's: a Linux pid fits 32 bits (pid_max is at most
	// 2^22); one that does not keeps the entity whole (rare.whole).
	pid int32
	// noMetadata is a nil Metadata; any other is "{}" (the shared
	// emptyMetadata) unless rare holds it.
	noMetadata bool
	// hasTransition: reasons[0] is the transition reason. findingsNil:
	// the findings were nil, not an empty list (reasons alone cannot say
	// so when it holds the transition).
	hasTransition, findingsNil bool
}

// named is an entity's label and heartbeat file: 32 bytes for those that
// have one, where both in the record made every record a size class
// larger (ADR-0052).
type named struct {
	label, heartbeatFile string
}

// codeRef is a reason code the entity holds and the index's number of
// its (code, severity, host).
type codeRef struct {
	code state.ReasonCode
	id   int32
}

// odd is the place of a severity or tone that is none of the known ones
// (state.Severities, state.Tones; Normalize gives no other): the record's
// rareFields keep it.
const odd = 255

// place is v's place in list, or odd.
func place[T comparable](list []T, v T) uint8 {
	for i, w := range list {
		if w == v {
			return uint8(i)
		}
	}
	return odd
}

// healthOf is the entity's health.
func (r *record) healthOf() state.Health {
	if r.health == odd {
		return r.odd.health
	}
	return state.Healths[r.health]
}

// deliveryOf is the entity's delivery.
func (r *record) deliveryOf() state.Delivery {
	if r.delivery == odd {
		return r.odd.delivery
	}
	return state.Deliveries[r.delivery]
}

// severity is the entity's severity.
func (r *record) severity() state.Severity {
	if r.sev == odd {
		return r.odd.severity
	}
	return state.Severities[r.sev]
}

// toneOf is the entity's tone.
func (r *record) toneOf() state.Tone {
	if r.tone == odd {
		return r.odd.tone
	}
	return state.Tones[r.tone]
}

// oddWords are a health, delivery, severity or tone none of the known
// ones (a hand-edited row, a newer daemon's word): each kept as it is.
type oddWords struct {
	health   state.Health
	delivery state.Delivery
	severity state.Severity
	tone     state.Tone
}

// rareFields are the fields most entities leave empty, kept only by
// those that have one. whole, when set, is the entity kept as it came: a
// time that microseconds would not give back exactly (not one the store
// decoded), so nothing is rebuilt approximately.
type rareFields struct {
	whole *store.Entity
	// reasons, when wholeReasons, are the entity's findings as decoded
	// (times that microseconds would not give back).
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

// empty reports whether r holds nothing: the entity needs no rareFields.
func (r *rareFields) empty() bool {
	return r.whole == nil && !r.wholeReasons && r.deadSince.IsZero() && r.supervisorStart.IsZero() && r.scheduleLastFired.IsZero() &&
		r.supervisorPID == 0 && r.heartbeatProgress == "" && r.timeout == 0 && r.timeoutElapsed == 0 &&
		r.artifactsRoot == "" && r.artifacts == nil && r.lockFiles == nil && r.parentType == "" && r.parentID == "" &&
		r.dependsOn == nil && r.scheduleCron == "" && r.metadata == nil && r.exit == nil
}

// emptyMetadata is the store's metadata of an entity without any ("{}"):
// kept once, not per entity.
var emptyMetadata = json.RawMessage("{}")

// newRecord derives e's record at at (the time of the change): e is the
// view's own copy, its words interned.
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

// newBody is e's compact body.
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
		// One slice for the transition and the findings: the transition's
		// own pointer would cost every record 8 bytes.
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

// entity rebuilds the entity the record was made of.
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

// findings are the entity's findings, compact (without the transition
// reason): nil when they were nil, or when rare keeps them whole.
func (b *body) findings() []reasonRec {
	if !b.hasTransition {
		return b.reasons
	}
	if b.findingsNil || (b.rare != nil && b.rare.wholeReasons) {
		return nil
	}
	return b.reasons[1:]
}

// entry rebuilds the record's Entry, its state evaluated at now: what
// Derive gave at the change, with Normalize's state computed again (a
// function of the entity alone but for its stamp).
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

// legacy reports whether the entity has no lifecycle.
func (r *record) legacy() bool { return r.lifecycle == nil }

// open reports whether the entity is open: not legacy, not terminal.
func (r *record) open() bool { return !r.legacy() && !r.terminal }

// arrival is attention.Arrived of the entity.
func (r *record) arrival() time.Time { return r.arrivedAt().time() }

// arrivedAt is attention.Arrived of the entity, from its body's times:
// the failure window's rule is one comparison, and a record keeps no
// copy of it. An entity kept whole has its times there (its body's may
// not be exact).
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

// lifecycleOr is store.Entity.LifecycleOr.
func (r *record) lifecycleOr(def string) string {
	if r.lifecycle == nil {
		return def
	}
	return *r.lifecycle
}
