package store

import (
	"encoding/json"
	"time"

	"watchdog/state"
)

// Open says e's lifecycle has not ended: the one rule of "open", which
// Filter.OpenOnly writes in SQL.
func (e *Entity) Open() bool { return e.Lifecycle != nil && !e.Terminal }

// Entity is one stored row. Zero numbers, times and durations mean "not
// recorded" and are stored as NULL.
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

	// Exit is how the process ended, when the kernel said so; nil otherwise.
	Exit *state.ExitStatus
	// Owner is the principal that registered the entity; OwnerUID is its uid when
	// the kernel proved one (HasOwnerUID), the only case the reaper may signal it.
	Owner       string
	OwnerUID    int
	HasOwnerUID bool
	// OwnerGuard (not stored) applies an upsert only when the row's owner_uid is
	// OwnerUID, checked in the write's transaction so no one races another's id.
	OwnerGuard bool
	// Revision is the store revision of the row's last write (assigned by
	// triggers for every writer): where the change feed finds it.
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
	// HostID is the entity's host when the row was written, stamped by the
	// write path so a fleet daemon reads the rows of the hosts it owns.
	HostID string
}

// Filter selects entities for List. Zero fields do not filter.
type Filter struct {
	Type string
	// HostID limits to entities recorded on that host.
	HostID string
	// AlsoRemoteLive, with HostID, also keeps other hosts' open entities with a
	// pid or heartbeat; the rest of another host's rows is never read.
	AlsoRemoteLive bool
	// AlsoHostless, with HostID, also keeps the entities recorded with no
	// host (host-less orchestration work: the fleet's leader judges them).
	AlsoHostless bool
	// OpenOnly keeps non-terminal, non-legacy entities.
	OpenOnly bool
	// EndedSince also keeps terminal entities that reached their outcome at
	// or after it (with OpenOnly), reckoned as attention.Arrived (ended_at,
	// else lifecycle_at, else updated_at: the failure window's one rule); an
	// orphan is kept whatever its age (attention.Lingers).
	EndedSince time.Time
	// ParentType and ParentID, when ParentID is set, keep the children of
	// that entity.
	ParentType string
	ParentID   string
	// DeadOnly keeps entities with a recorded death, filtered in SQL so that
	// enforcement does not decode every open row.
	DeadOnly bool
	// PhantomBefore, when set, keeps only reap_phantoms' candidates, by index:
	// judge.PhantomDue by the row, at now - phantom_after.
	PhantomBefore time.Time
	Reconciled    []string
	// RevisionsOnly fills only key and Revision, so a reader re-reads only rows
	// whose revision moved.
	RevisionsOnly bool
	// After, when its Type is set, keeps entities past this key in list order.
	After Key
	// Limit, when positive, reads at most this many entities: a page (ADR-0052).
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
