package store

import (
	"time"

	"watchdog/state"
)

// Observation is what a probe found: the persisted health and delivery
// dimensions and the reasons behind them.
type Observation struct {
	Health      state.Health
	Delivery    state.Delivery
	Reasons     []state.StateReason
	HealthSince time.Time
	// DeadSince is the first time a conclusive death was seen (zero clears it).
	// It is persisted so terminal_grace survives a daemon restart.
	DeadSince time.Time
	// SeenSeq is the audit seq of the lifecycle judged; the write is skipped if
	// a transition landed since.
	SeenSeq int64
	// SeenDeadSince is the death the judgement read (zero: none). An
	// observation with no death clears only a death it read: one that
	// judged a process alive an instant before its death, and wrote after
	// it was recorded, is skipped (a stale write never erases a death).
	SeenDeadSince time.Time
	At            time.Time
	// Exit is the exit status the kernel reported with the death, written
	// with it; nil leaves the stored one. With it, the observation is
	// written only while the row still names PID, the process that died (a
	// re-registration does not move SeenSeq).
	Exit *state.ExitStatus
	PID  int
	// Runner: written by the entity's runner (exec's own exit status), not
	// by a judgement: only the exit status is written (the stored health,
	// findings and death stay), and it does not say a daemon judged then.
	Runner bool
}
