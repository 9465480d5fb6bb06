package transitions

import (
	"errors"

	"watchdog/state"
	"watchdog/store"
)

// Typed outcomes of the write path, checked with errors.Is. Each maps to
// one HTTP status and one `watchdog_transitions_rejected_total` cause.
var (
	// ErrUnknownType: the entity type has no graph.
	ErrUnknownType = errors.New("unknown entity type")
	// ErrUnknownState: the lifecycle value is not in the type's vocabulary.
	ErrUnknownState = errors.New("unknown lifecycle state")
	// ErrInvalidTransition: the edge is not in the graph, or evidence forbids it.
	ErrInvalidTransition = errors.New("invalid transition")
	// ErrReasonRequired: the target needs a reason code and none was given.
	ErrReasonRequired = errors.New("reason code required")
	// ErrForbidden: the actor may not move the entity to that target.
	ErrForbidden = errors.New("forbidden for actor")
	// ErrInvalidInput: a malformed field (id, actor, trigger, evidence, ...).
	ErrInvalidInput = errors.New("invalid input")
	// ErrOverLimit: a well-formed document beyond a limit the daemon keeps.
	ErrOverLimit = errors.New("over a limit")
	// ErrUnknownReason: the reason code is malformed or not registered.
	ErrUnknownReason = state.ErrUnknownReason
	// ErrNotFound: no such entity.
	ErrNotFound = store.ErrNotFound
	// ErrConflict: the stored lifecycle is not the expected one (a lost
	// race); never a second terminal state.
	ErrConflict = store.ErrConflict
)

// Rejection causes: the closed label vocabulary of rejected transitions.
const (
	CauseNotFound          = "not_found"
	CauseInvalidTransition = "invalid_transition"
	CauseConflict          = "conflict"
	CauseUnknownReason     = "unknown_reason"
	CauseReasonRequired    = "reason_required"
	CauseForbidden         = "forbidden"
	CauseUnknownType       = "unknown_type"
	CauseUnknownState      = "unknown_state"
	CauseInvalidInput      = "invalid_input"
	CauseOverLimit         = "over_limit"
	CauseStoreError        = "store_error"
	CausePIDRefused        = "pid_refused"
)

// Causes lists every rejection cause (for pre-seeding metrics).
var Causes = []string{
	CauseNotFound, CauseInvalidTransition, CauseConflict, CauseUnknownReason,
	CauseReasonRequired, CauseForbidden, CauseUnknownType, CauseUnknownState,
	CauseInvalidInput, CauseOverLimit, CauseStoreError, CausePIDRefused,
}

// Cause classifies a write-path error into its rejection cause.
func Cause(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return CauseNotFound
	case errors.Is(err, ErrConflict):
		return CauseConflict
	case errors.Is(err, ErrInvalidTransition):
		return CauseInvalidTransition
	case errors.Is(err, ErrUnknownReason), errors.Is(err, state.ErrMalformedCode):
		return CauseUnknownReason
	case errors.Is(err, ErrReasonRequired):
		return CauseReasonRequired
	case errors.Is(err, ErrForbidden):
		return CauseForbidden
	case errors.Is(err, ErrUnknownType):
		return CauseUnknownType
	case errors.Is(err, ErrUnknownState):
		return CauseUnknownState
	case errors.Is(err, ErrInvalidInput):
		return CauseInvalidInput
	case errors.Is(err, ErrOverLimit):
		return CauseOverLimit
	case errors.Is(err, ErrPIDRefused), errors.Is(err, ErrPIDGone):
		return CausePIDRefused
	}
	return CauseStoreError
}
