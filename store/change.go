package store

import (
	"time"

	"watchdog/state"
)

// Change is what a Decider decided: the new lifecycle and its audit row.
type Change struct {
	To       string
	Terminal bool
	// Starts says the move starts the work: started_at is stamped unless
	// already set (the type's graph decides which state does).
	Starts bool
	// Reason is stored on the entity as the reason of its current
	// lifecycle, and its code, message and evidence go to the audit row.
	Reason *state.StateReason
	Actor  string
	// Principal is who asked (the audit row's principal).
	Principal string
	Trigger   string
	At        time.Time
	// Timeout and TimeoutElapsed are recorded with a timed_out transition
	// (zero leaves the stored value alone).
	Timeout        time.Duration
	TimeoutElapsed time.Duration
	// Delivery, when set, is the contract's verdict at the end, stored with it.
	Delivery *DeliveryRecord
}

// DeliveryRecord is a contract's verdict as a transition records it.
type DeliveryRecord struct {
	Delivery state.Delivery
	// Reasons are the delivery findings (run.delivery.*), with evidence.
	Reasons []state.StateReason
}

// Decider validates a transition against the entity as stored, inside the
// write transaction; an error aborts it.
type Decider func(current Entity) (Change, error)
