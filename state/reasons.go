package state

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ReasonCode is a structured cause, `{entity_type}.{dimension}.{cause}`.
// Every code the program emits is one of the constants below and is listed
// in the registry; a test scans the source to keep it so.
type ReasonCode string

// Run (session, invocation, subagent, workflow, turn) codes.
const (
	// RunCompletedExitZero: the process exited with code 0.
	RunCompletedExitZero ReasonCode = "run.completed.exit_zero"
	// RunFailedExitNonzero: the process exited with a non-zero code.
	RunFailedExitNonzero ReasonCode = "run.failed.exit_nonzero"
	// RunFailedSignal: the process was killed by a signal other than SIGINT or SIGTERM.
	RunFailedSignal ReasonCode = "run.failed.signal"
	// RunFailedArtifactContract: a required artifact was not produced or is invalid.
	RunFailedArtifactContract ReasonCode = "run.failed.artifact_contract"
	// RunFailedOperator: an operator marked the run failed.
	RunFailedOperator ReasonCode = "run.failed.operator"
	// RunTimedOutDeadline: the run exceeded its configured timeout.
	RunTimedOutDeadline ReasonCode = "run.timed_out.deadline"
	// RunAbortedSigint: the run was interrupted by SIGINT (exit 130).
	RunAbortedSigint ReasonCode = "run.aborted.sigint"
	// RunAbortedOperator: an operator aborted the run.
	RunAbortedOperator ReasonCode = "run.aborted.operator"
	// RunCancelledSigterm: the run was cancelled by SIGTERM (exit 143).
	RunCancelledSigterm ReasonCode = "run.cancelled.sigterm"
	// RunCancelledOperator: an operator or orchestrator cancelled the run.
	RunCancelledOperator ReasonCode = "run.cancelled.operator"
	// RunHealthProcessDead: the recorded process is conclusively gone.
	RunHealthProcessDead ReasonCode = "run.health.process_dead"
	// RunHealthPIDReused: the pid now belongs to another process (different start time).
	RunHealthPIDReused ReasonCode = "run.health.pid_reused"
	// RunHealthHostRebooted: the host rebooted since the process started (different boot id).
	RunHealthHostRebooted ReasonCode = "run.health.host_rebooted"
	// RunHealthLivenessUnknown: liveness could not be decided (no pid yet, permission denied, unreadable /proc).
	RunHealthLivenessUnknown ReasonCode = "run.health.liveness_unknown"
	// RunHealthDisconnected: the process runs on another host and no fresh heartbeat arrived.
	RunHealthDisconnected ReasonCode = "run.health.disconnected"
	// RunHealthStalled: no heartbeat for at least stalled_after.
	RunHealthStalled ReasonCode = "run.health.stalled"
	// RunHealthIdle: no heartbeat for at least idle_after.
	RunHealthIdle ReasonCode = "run.health.idle"
	// RunHealthSlow: alive and heartbeating but running longer than slow_after.
	RunHealthSlow ReasonCode = "run.health.slow"
	// RunHealthClockSkew: a heartbeat carries a time in the future; it was clamped.
	RunHealthClockSkew ReasonCode = "run.health.clock_skew"
	// RunHealthOrphaned: the process is alive but its supervisor or parent entity is gone.
	RunHealthOrphaned ReasonCode = "run.health.orphaned"
	// RunHealthStaleLock: a terminal entity's declared lock file still exists.
	RunHealthStaleLock ReasonCode = "run.health.stale_lock"
	// RunDeliveryMissing: none of the required artifacts is present.
	RunDeliveryMissing ReasonCode = "run.delivery.missing"
	// RunDeliveryPartial: some but not all required artifacts are valid.
	RunDeliveryPartial ReasonCode = "run.delivery.partial"
	// RunDeliveryInvalid: an artifact is present but fails validation or escapes the root.
	RunDeliveryInvalid ReasonCode = "run.delivery.invalid"
	// RunDeliveryCheckStopped: the artifact check stopped at a bound (entries, depth, artifacts, time); delivery unknown.
	RunDeliveryCheckStopped ReasonCode = "run.delivery.check_stopped"
)

// System (watchdog's own enforcement) codes.
const (
	// SystemHealthProcessDeadNoTerminal: the process died without recording a terminal state.
	SystemHealthProcessDeadNoTerminal ReasonCode = "system.health.process_dead_no_terminal"
	// SystemReaperPhantomProcessDead: a phantom whose process is dead was reaped.
	SystemReaperPhantomProcessDead ReasonCode = "system.reaper.phantom_process_dead"
	// SystemReaperPhantomOrphaned: a phantom whose process is orphaned was reaped.
	SystemReaperPhantomOrphaned ReasonCode = "system.reaper.phantom_orphaned"
	// SystemReaperOrphanKilled: the reaper signalled an orphaned process (kill_orphans).
	SystemReaperOrphanKilled ReasonCode = "system.reaper.orphan_killed"
	// SystemOutcomeUnexplained: the entity is in a failing outcome with no recorded reason (registered in it, e.g. imported).
	SystemOutcomeUnexplained ReasonCode = "system.outcome.unexplained"
)

// Codes of the orchestration entity types.
const (
	// ShowFailedCriticalPathBlocked: a critical-path play of the show failed.
	ShowFailedCriticalPathBlocked ReasonCode = "show.failed.critical_path_blocked"
	// ShowBlockedNoReadyPlays: the show is active but none of its plays can run.
	ShowBlockedNoReadyPlays ReasonCode = "show.blocked.no_ready_plays"
	// PlayBlockedDependencyFailed: a play in depends_on failed.
	PlayBlockedDependencyFailed ReasonCode = "play.blocked.dependency_failed"
	// PlayBlockedDependencyInvalid: a play named in depends_on does not exist.
	PlayBlockedDependencyInvalid ReasonCode = "play.blocked.dependency_invalid"
	// ScheduleHealthDue: the schedule's fire time passed and is within misfire_grace.
	ScheduleHealthDue ReasonCode = "schedule.health.due"
	// ScheduleHealthMisfired: a fire time passed more than misfire_grace ago without a fire.
	ScheduleHealthMisfired ReasonCode = "schedule.health.misfired"
	// TeamHealthOrphaned: the team's parent show or play is terminal but the team is not.
	TeamHealthOrphaned ReasonCode = "team.health.orphaned"
	// AgentFailedProcessCrashed: the agent's backend process crashed.
	AgentFailedProcessCrashed ReasonCode = "agent.failed.process_crashed"
	// AgentStoppedProcessExited: the agent's backend process exited cleanly.
	AgentStoppedProcessExited ReasonCode = "agent.stopped.process_exited"
	// TeamBlockedDependency: the team is waiting on work or a decision outside it.
	TeamBlockedDependency ReasonCode = "team.blocked.dependency"
)

// Codes of the seed-002 types (subagent, workflow, turn) for the terminal
// states that need a reason and that no run code names.
const (
	// SubagentInterruptedParent: the parent or an operator interrupted the subagent.
	SubagentInterruptedParent ReasonCode = "subagent.interrupted.parent"
	// SubagentDetachedUnmanaged: the subagent is no longer synchronously controlled by its manager.
	SubagentDetachedUnmanaged ReasonCode = "subagent.detached.unmanaged"
	// WorkflowPartialOutcome: the workflow ended with a bounded partial result, not full completion.
	WorkflowPartialOutcome ReasonCode = "workflow.partial.partial_outcome"
	// TurnPartialFailedProvider: the provider emitted useful text but the turn failed before clean completion.
	TurnPartialFailedProvider ReasonCode = "turn.partial_failed.provider_error"
	// TurnInterruptedOperator: the operator or presenter interrupted the turn.
	TurnInterruptedOperator ReasonCode = "turn.interrupted.operator"
)

// ReasonInfo is one registry entry: a code and the line that documents it.
type ReasonInfo struct {
	Code ReasonCode `json:"code"`
	Doc  string     `json:"doc"`
}

// reasonEntries is the registry's one source: every code with its doc line,
// which repeats the constant's doc comment (a test keeps the two equal).
var reasonEntries = []ReasonInfo{
	{RunCompletedExitZero, "the process exited with code 0."},
	{RunFailedExitNonzero, "the process exited with a non-zero code."},
	{RunFailedSignal, "the process was killed by a signal other than SIGINT or SIGTERM."},
	{RunFailedArtifactContract, "a required artifact was not produced or is invalid."},
	{RunFailedOperator, "an operator marked the run failed."},
	{RunTimedOutDeadline, "the run exceeded its configured timeout."},
	{RunAbortedSigint, "the run was interrupted by SIGINT (exit 130)."},
	{RunAbortedOperator, "an operator aborted the run."},
	{RunCancelledSigterm, "the run was cancelled by SIGTERM (exit 143)."},
	{RunCancelledOperator, "an operator or orchestrator cancelled the run."},
	{RunHealthProcessDead, "the recorded process is conclusively gone."},
	{RunHealthPIDReused, "the pid now belongs to another process (different start time)."},
	{RunHealthHostRebooted, "the host rebooted since the process started (different boot id)."},
	{RunHealthLivenessUnknown, "liveness could not be decided (no pid yet, permission denied, unreadable /proc)."},
	{RunHealthDisconnected, "the process runs on another host and no fresh heartbeat arrived."},
	{RunHealthStalled, "no heartbeat for at least stalled_after."},
	{RunHealthIdle, "no heartbeat for at least idle_after."},
	{RunHealthSlow, "alive and heartbeating but running longer than slow_after."},
	{RunHealthClockSkew, "a heartbeat carries a time in the future; it was clamped."},
	{RunHealthOrphaned, "the process is alive but its supervisor or parent entity is gone."},
	{RunHealthStaleLock, "a terminal entity's declared lock file still exists."},
	{RunDeliveryMissing, "none of the required artifacts is present."},
	{RunDeliveryPartial, "some but not all required artifacts are valid."},
	{RunDeliveryInvalid, "an artifact is present but fails validation or escapes the root."},
	{RunDeliveryCheckStopped, "the artifact check stopped at a bound (entries, depth, artifacts, time); delivery unknown."},
	{SystemHealthProcessDeadNoTerminal, "the process died without recording a terminal state."},
	{SystemReaperPhantomProcessDead, "a phantom whose process is dead was reaped."},
	{SystemReaperPhantomOrphaned, "a phantom whose process is orphaned was reaped."},
	{SystemReaperOrphanKilled, "the reaper signalled an orphaned process (kill_orphans)."},
	{SystemOutcomeUnexplained, "the entity is in a failing outcome with no recorded reason (registered in it, e.g. imported)."},
	{ShowFailedCriticalPathBlocked, "a critical-path play of the show failed."},
	{ShowBlockedNoReadyPlays, "the show is active but none of its plays can run."},
	{PlayBlockedDependencyFailed, "a play in depends_on failed."},
	{PlayBlockedDependencyInvalid, "a play named in depends_on does not exist."},
	{ScheduleHealthDue, "the schedule's fire time passed and is within misfire_grace."},
	{ScheduleHealthMisfired, "a fire time passed more than misfire_grace ago without a fire."},
	{TeamHealthOrphaned, "the team's parent show or play is terminal but the team is not."},
	{AgentFailedProcessCrashed, "the agent's backend process crashed."},
	{AgentStoppedProcessExited, "the agent's backend process exited cleanly."},
	{TeamBlockedDependency, "the team is waiting on work or a decision outside it."},
	{SubagentInterruptedParent, "the parent or an operator interrupted the subagent."},
	{SubagentDetachedUnmanaged, "the subagent is no longer synchronously controlled by its manager."},
	{WorkflowPartialOutcome, "the workflow ended with a bounded partial result, not full completion."},
	{TurnPartialFailedProvider, "the provider emitted useful text but the turn failed before clean completion."},
	{TurnInterruptedOperator, "the operator or presenter interrupted the turn."},
}

// Namespaces are the first segments a reason code may have: the entity
// types (and the `run` alias of session), `system` and `knowledge`.
var Namespaces = []string{
	"run", "session", "show", "play", "invocation", "schedule", "team",
	"agent", "subagent", "workflow", "turn", "system", "knowledge",
}

var codeShape = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`)

// ErrMalformedCode is returned for a code outside the namespace convention.
var ErrMalformedCode = errors.New("malformed reason code")

// ValidateCode checks the namespace convention: three lowercase,
// dot-separated segments, the first an entity type, `system` or `knowledge`.
func ValidateCode(code string) error {
	if !codeShape.MatchString(code) {
		return fmt.Errorf("%w %q: want {entity_type}.{dimension}.{cause}, lowercase, dot separated", ErrMalformedCode, code)
	}
	ns := code[:strings.IndexByte(code, '.')]
	for _, n := range Namespaces {
		if n == ns {
			return nil
		}
	}
	return fmt.Errorf("%w %q: namespace %q is not an entity type, system or knowledge", ErrMalformedCode, code, ns)
}

// buildRegistry validates every entry and refuses malformed or duplicate
// codes and empty docs.
func buildRegistry(entries []ReasonInfo) (map[ReasonCode]ReasonInfo, error) {
	m := make(map[ReasonCode]ReasonInfo, len(entries))
	for _, e := range entries {
		if err := ValidateCode(string(e.Code)); err != nil {
			return nil, err
		}
		if _, dup := m[e.Code]; dup {
			return nil, fmt.Errorf("reason code %q registered twice", e.Code)
		}
		if strings.TrimSpace(e.Doc) == "" {
			return nil, fmt.Errorf("reason code %q has no doc line", e.Code)
		}
		m[e.Code] = e
	}
	return m, nil
}

var registry = mustBuildRegistry(reasonEntries)

// mustBuildRegistry fails loudly at start: a malformed or duplicate code is
// a programming error that no user input can cause.
func mustBuildRegistry(entries []ReasonInfo) map[ReasonCode]ReasonInfo {
	m, err := buildRegistry(entries)
	if err != nil {
		panic("state: " + err.Error())
	}
	return m
}

// ErrUnknownReason is returned for a well-formed code that is not registered.
var ErrUnknownReason = errors.New("unknown reason code")

// CheckCode validates the shape of code and that it is registered.
func CheckCode(code string) error {
	if err := ValidateCode(code); err != nil {
		return err
	}
	if _, ok := registry[ReasonCode(code)]; !ok {
		return fmt.Errorf("%w %q (see `watchdog reasons`)", ErrUnknownReason, code)
	}
	return nil
}

// ForeignTo names the entity type a code belongs to when that is another
// type than typ ("" when the code fits typ): run, system and knowledge codes
// fit every type, an entity type's own codes fit only that type.
func ForeignTo(code ReasonCode, typ string) string {
	ns, _, _ := strings.Cut(string(code), ".")
	switch ns {
	case "run", "system", "knowledge", typ:
		return ""
	}
	return ns
}

// reservedPrefixes are the namespaces of the watchdog's own verdicts.
var reservedPrefixes = []string{"system.health.", "system.reaper."}

// Reserved reports whether code is one of the watchdog's own verdicts
// (system.health.*, system.reaper.*), which only its reaper may record: an
// audit row carrying one must mean the watchdog itself decided, never an
// orchestrator dressing its own transition up as the watchdog's.
func Reserved(code ReasonCode) bool {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(string(code), p) {
			return true
		}
	}
	return false
}

// Registered reports whether code is in the registry.
func Registered(code ReasonCode) bool {
	_, ok := registry[code]
	return ok
}

// Reasons lists the registry sorted by code.
func Reasons() []ReasonInfo {
	out := make([]ReasonInfo, 0, len(registry))
	for _, e := range registry {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}
