package store

import (
	"encoding/json"
	"time"

	"watchdog/state"
)

// Open says e has a lifecycle that has not ended (its terminal flag, set
// by the write path from its graph): the one rule of "open", which the
// drivers' Filter.OpenOnly writes in SQL.
func (e *Entity) Open() bool { return e.Lifecycle != nil && !e.Terminal }

// Entity is one stored row: the registered fields, the persisted dimensions
// (lifecycle, health, delivery, reasons) and timestamps. Zero numbers,
// times and durations mean "not recorded" and are stored as NULL.
type Entity struct {
	Type  string
	ID    string
	Label string
	// Lifecycle is nil for a legacy entity.
	Lifecycle *string
	Terminal  bool
	// LastSeq is the audit row of the last lifecycle change.
	LastSeq          int64
	TransitionReason *state.StateReason
	Health           state.Health
	Delivery         state.Delivery
	Reasons          []state.StateReason
	HealthSince      time.Time
	DeadSince        time.Time

	HostID        string
	BootID        string
	PID           int
	PIDStartTime  time.Time
	PIDStartTicks uint64
	SupervisorPID int
	// SupervisorStartTime is the supervisor's start time (zero = unknown).
	SupervisorStartTime time.Time

	HeartbeatFile     string
	HeartbeatAt       time.Time
	HeartbeatProgress string

	// Timeout is the registered timeout; TimeoutElapsed is how long the
	// entity had run when it timed out.
	Timeout        time.Duration
	TimeoutElapsed time.Duration

	ArtifactsRoot string
	// Artifacts may be shared between the entities of one List (identical
	// contracts are decoded once): treat it as read-only.
	Artifacts []state.ArtifactSpec
	LockFiles []string

	ParentType string
	ParentID   string
	DependsOn  []string

	ScheduleCron        string
	ScheduleLastFiredAt time.Time

	Metadata json.RawMessage

	StartedAt   time.Time
	EndedAt     time.Time
	LifecycleAt time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time

	// Exit is how the entity's process ended, when the kernel said so
	// (RecordExit); nil while it runs, when it was not watched by pidfd, or
	// on a kernel that does not keep it.
	Exit *state.ExitStatus
	// Owner is the principal that registered the entity ("uid:1000
	// (alice)", a token's name; "" before issue 36). OwnerUID is its uid
	// when the kernel proved one (HasOwnerUID): only then may the reaper
	// signal the entity's processes, and its files are examined with that
	// uid's rights (docs/security.md).
	Owner       string
	OwnerUID    int
	HasOwnerUID bool
	// OwnerGuard, on a registration (not stored), makes the upsert of an
	// existing row apply only when its owner_uid is OwnerUID, checked in
	// the write's own transaction (ErrNotOwner otherwise): a caller that
	// may act only on its own entities cannot race another's
	// registration of the same id.
	OwnerGuard bool
	// Revision is the store revision of the row's last write (migration
	// 0005's triggers assign it, for every writer): where the change feed
	// (ChangesSince) finds it. 0 for an entity built in memory.
	Revision int64
}

// LifecycleOr returns the lifecycle, or def for a legacy entity.
func (e Entity) LifecycleOr(def string) string {
	if e.Lifecycle == nil {
		return def
	}
	return *e.Lifecycle
}

// AuditRow is one row of the append-only transitions log.
type AuditRow struct {
	Seq        int64
	EntityType string
	EntityID   string
	// From is nil for the registration row of a new entity.
	From       *string
	To         string
	ReasonCode string
	Message    string
	Evidence   []state.EvidenceRef
	Actor      string
	// Principal is who caused the row: a socket peer ("uid:1000
	// (alice)"), a token's name, or a daemon's job ("reaper@host-13").
	Principal string
	Trigger   string
	At        time.Time
	// HostID is the host of the entity when the row was written ("" for a
	// host-less one), stamped by the write path: a daemon of a fleet reads
	// and counts the audit rows of the hosts it owns (ChangesFor).
	HostID string
}

// Filter selects entities for List. Zero fields do not filter.
type Filter struct {
	Type string
	// HostID limits to entities recorded on that host.
	HostID string
	// AlsoRemoteLive, with HostID, also keeps the open entities of other
	// hosts that have a pid or a posted heartbeat: what a sweep judges of
	// them (by heartbeat). The rest of another host's rows is never read.
	AlsoRemoteLive bool
	// AlsoHostless, with HostID, also keeps the entities recorded with no
	// host (host-less orchestration work: the fleet's leader judges them).
	AlsoHostless bool
	// OpenOnly keeps non-terminal, non-legacy entities.
	OpenOnly bool
	// EndedSince also keeps terminal entities that ended at or after this
	// time (with OpenOnly): the probe's window for stale locks and orphans.
	// An orphan (health orphaned) is kept whatever its age: its process
	// lives, and only the probe can see it go (attention.Lingers).
	EndedSince time.Time
	// ParentType and ParentID, when ParentID is set, keep the children of
	// that entity.
	ParentType string
	ParentID   string
	// DeadOnly keeps the entities with a recorded death (dead_since): all
	// enforcement looks at, filtered in SQL so that its reconciling run
	// does not decode every open row of a big host twice a minute.
	DeadOnly bool
	// PhantomBefore, when set, keeps reap_phantoms' candidates alone, by
	// index, all open (OpenOnly, whatever EndedSince says): every entity of
	// the Reconciled types (their relatives settle them), and of the other
	// types those recorded process_dead or orphaned whose row shows no
	// activity (registration, lifecycle change, heartbeat, start) after
	// it: judge.PhantomDue by the row, at now - phantom_after.
	PhantomBefore time.Time
	Reconciled    []string
	// RevisionsOnly fills only each entity's key and Revision: a reader
	// that keeps what it read (the sweep) reads again only the rows whose
	// revision moved, as every write of a row takes a new one.
	RevisionsOnly bool
	// After, when its Type is set, keeps the entities past this key in the
	// list's order (type, then id, in byte order): the next page after the
	// last entity of the one before.
	After Key
	// Limit, when positive, reads at most this many entities: a page. A
	// page shorter than Limit is the last one. A reader that walks a whole
	// host a page at a time (the sweep) holds a page, not the host
	// (ADR-0052).
	Limit int
}

// Key names one entity: its type and id, the store's primary key and the
// order List returns entities in.
type Key struct {
	Type string
	ID   string
}

// KeyOf is e's key.
func KeyOf(e *Entity) Key { return Key{Type: e.Type, ID: e.ID} }

// Less says whether k comes before o in List's order (byte order of the
// type, then of the id).
func (k Key) Less(o Key) bool {
	return k.Type < o.Type || (k.Type == o.Type && k.ID < o.ID)
}
