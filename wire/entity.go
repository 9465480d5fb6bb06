package wire

import (
	"encoding/json"
	"sort"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// AuditRow is one transition on the wire; Seq is its place in the whole audit log.
type AuditRow struct {
	Seq        int64               `json:"seq"`
	From       *string             `json:"from"`
	To         string              `json:"to"`
	ReasonCode string              `json:"reason_code"`
	Message    string              `json:"message"`
	Evidence   []state.EvidenceRef `json:"evidence"`
	Actor      string              `json:"actor"`
	// Principal is who wrote the row: "uid:1000 (alice)", "token:ci", ….
	Principal string        `json:"principal,omitempty"`
	Trigger   string        `json:"trigger"`
	At        unixtime.Time `json:"at"`
}

// Entity is the entity read shape: the registered fields, the normalized
// state, the display chain and (for a single-entity read) the audit rows.
type Entity struct {
	Type         string        `json:"type"`
	ID           string        `json:"id"`
	Label        string        `json:"label"`
	Lifecycle    *string       `json:"lifecycle"`
	PID          int           `json:"pid,omitempty"`
	PIDStartTime unixtime.Time `json:"pid_start_time,omitzero"`
	HostID       string        `json:"host_id,omitempty"`
	// HostName is the hostname the host's daemon recorded; the id stays the key.
	HostName        string        `json:"host_name,omitempty"`
	BootID          string        `json:"boot_id,omitempty"`
	SupervisorPID   int           `json:"supervisor_pid,omitempty"`
	SupervisorStart unixtime.Time `json:"supervisor_start_time,omitzero"`
	// Owner registered the entity; OwnerUID is the uid it proved (nil: never signalled).
	Owner         string `json:"owner,omitempty"`
	OwnerUID      *int   `json:"owner_uid,omitempty"`
	HeartbeatFile string `json:"heartbeat_file,omitempty"`
	// HeartbeatAt is the latest posted heartbeat; Heartbeat the one judged.
	HeartbeatAt       unixtime.Time          `json:"heartbeat_at,omitzero"`
	Heartbeat         *state.JudgedHeartbeat `json:"heartbeat,omitempty"`
	HeartbeatProgress string                 `json:"heartbeat_progress,omitempty"`
	// HangDetection is NoHangDetection when a hang would not be seen.
	HangDetection  string               `json:"hang_detection,omitempty"`
	TimeoutSeconds float64              `json:"timeout_seconds,omitempty"`
	TimeoutElapsed float64              `json:"timeout_elapsed,omitempty"`
	ArtifactsRoot  string               `json:"artifacts_root,omitempty"`
	Artifacts      []state.ArtifactSpec `json:"artifacts,omitempty"`
	LockFiles      []string             `json:"lock_files,omitempty"`
	Parent         *Ref                 `json:"parent,omitempty"`
	DependsOn      []string             `json:"depends_on,omitempty"`
	Schedule       *Schedule            `json:"schedule,omitempty"`
	Metadata       json.RawMessage      `json:"metadata,omitempty"`
	StartedAt      unixtime.Time        `json:"started_at,omitzero"`
	EndedAt        unixtime.Time        `json:"ended_at,omitzero"`
	HealthSince    unixtime.Time        `json:"health_since,omitzero"`
	// ExitStatus is how the entity's process ended; absent while unknown.
	ExitStatus *state.ExitStatus `json:"exit_status,omitempty"`
	// Process is the open entity's process facts, read at this read on its host.
	Process *state.ProcessFacts `json:"process,omitempty"`
	// Leftovers is what the processes its leftover finding names are doing.
	Leftovers *state.LeftoverFacts `json:"leftover_processes,omitempty"`
	CreatedAt unixtime.Time        `json:"created_at"`
	UpdatedAt unixtime.Time        `json:"updated_at"`
	// AgentStatus and ActivityState are the agent type's legacy mappings.
	AgentStatus   string                `json:"agent_status,omitempty"`
	ActivityState string                `json:"activity_state,omitempty"`
	State         state.NormalizedState `json:"state"`
	Display       string                `json:"display"`
	// Transitions are a single-entity read's latest audit rows; TransitionsTotal counts all.
	Transitions      *[]AuditRow `json:"transitions,omitempty"`
	TransitionsTotal *int        `json:"transitions_total,omitempty"`
}

// renderedAt is state.Rendered, sparing the copy of shared slices when no reason has a moment.
func renderedAt(reasons []state.StateReason, now time.Time) []state.StateReason {
	for _, r := range reasons {
		if !r.Since.IsZero() {
			return state.Rendered(reasons, now)
		}
	}
	return reasons
}

// FromEntity builds the read shape; rows may be nil (lists omit history).
func FromEntity(e store.Entity, rows []store.AuditRow, hb *Heartbeats, now time.Time) Entity {
	return FromDerived(e, transitions.Normalize(e, now), rows, hb, now)
}

// FromDerived is FromEntity for an already derived state. Messages are
// rendered at now: the stored ones carry moments, not ages.
func FromDerived(e store.Entity, ns state.NormalizedState, rows []store.AuditRow, hb *Heartbeats, now time.Time) Entity {
	ns.Reasons = renderedAt(ns.Reasons, now)
	out := Entity{
		Type: e.Type, ID: e.ID, Label: e.Label, Lifecycle: e.Lifecycle,
		PID: e.PID, PIDStartTime: unixtime.Of(e.PIDStartTime), HostID: e.HostID, BootID: e.BootID, Owner: e.Owner,
		SupervisorPID: e.SupervisorPID, SupervisorStart: unixtime.Of(e.SupervisorStartTime), HeartbeatFile: e.HeartbeatFile, HeartbeatAt: unixtime.Of(e.HeartbeatAt),
		HeartbeatProgress: e.HeartbeatProgress, TimeoutSeconds: e.Timeout.Seconds(), TimeoutElapsed: e.TimeoutElapsed.Seconds(),
		ArtifactsRoot: e.ArtifactsRoot, Artifacts: e.Artifacts, LockFiles: e.LockFiles, DependsOn: e.DependsOn,
		StartedAt: unixtime.Of(e.StartedAt), EndedAt: unixtime.Of(e.EndedAt), HealthSince: unixtime.Of(e.HealthSince),
		CreatedAt: unixtime.Of(e.CreatedAt), UpdatedAt: unixtime.Of(e.UpdatedAt), ExitStatus: e.Exit,
		State: ns, Display: transitions.Display(e, ns), Heartbeat: hb.Of(&e, now), HangDetection: hb.hangDetection(&e),
	}
	if len(e.Metadata) > 0 && string(e.Metadata) != "{}" {
		out.Metadata = e.Metadata
	}
	if e.HasOwnerUID {
		uid := e.OwnerUID
		out.OwnerUID = &uid
	}
	if e.ParentID != "" {
		out.Parent = &Ref{Type: e.ParentType, ID: e.ParentID}
	}
	if e.ScheduleCron != "" {
		out.Schedule = &Schedule{Cron: e.ScheduleCron, LastFiredAt: unixtime.Of(e.ScheduleLastFiredAt)}
	}
	if e.Type == "agent" && e.Lifecycle != nil {
		out.AgentStatus = transitions.ToAgentStatus(*e.Lifecycle)
		out.ActivityState = transitions.ToActivityState(*e.Lifecycle)
	}
	if rows != nil {
		list := FromAuditRows(rows)
		out.Transitions = &list
		total := len(rows)
		out.TransitionsTotal = &total
	}
	return out
}

// FromAuditRows builds the wire rows, evidence never null.
func FromAuditRows(rows []store.AuditRow) []AuditRow {
	list := make([]AuditRow, 0, len(rows))
	for _, r := range rows {
		ev := r.Evidence
		if ev == nil {
			ev = []state.EvidenceRef{}
		}
		list = append(list, AuditRow{
			Seq: r.Seq, From: r.From, To: r.To, ReasonCode: r.ReasonCode, Message: r.Message,
			Evidence: ev, Actor: r.Actor, Principal: r.Principal, Trigger: r.Trigger, At: unixtime.Of(r.At),
		})
	}
	return list
}

// TransitionPage is the body of GET …/transitions; NextAfter is 0 on the last page.
type TransitionPage struct {
	Items     []AuditRow `json:"items"`
	NextAfter int64      `json:"next_after,omitempty"`
}

// EntityList is the body of GET /api/v1/entities and `status --json`; Total counts every page.
type EntityList struct {
	GeneratedAt unixtime.Time `json:"generated_at"`
	Total       int           `json:"total"`
	Items       []Entity      `json:"items"`
	Next        string        `json:"next,omitempty"`
}

// SeverityKey is an entity's place in the severity order: severity (legacy
// last), most recently updated, then type and id.
type SeverityKey struct {
	Rank    int
	Updated time.Time
	Type    string
	ID      string
}

// SeverityKeyOf is the key of an entity with state ns.
func SeverityKeyOf(ns state.NormalizedState, updated time.Time, typ, id string) SeverityKey {
	return SeverityKey{Rank: ns.ListRank(), Updated: updated, Type: typ, ID: id}
}

// Less says a comes before b.
func (a SeverityKey) Less(b SeverityKey) bool {
	if a.Rank != b.Rank {
		return a.Rank < b.Rank
	}
	if !a.Updated.Equal(b.Updated) {
		return a.Updated.After(b.Updated)
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.ID < b.ID
}

// SortEntities orders items by SeverityKey.
func SortEntities(items []Entity) {
	key := func(e Entity) SeverityKey { return SeverityKeyOf(e.State, e.UpdatedAt.Time, e.Type, e.ID) }
	sort.SliceStable(items, func(i, j int) bool { return key(items[i]).Less(key(items[j])) })
}
