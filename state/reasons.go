package state

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ReasonCode is a structured cause, `{entity_type}.{dimension}.{cause}`.
// Every code emitted is registered below; a test scans the source to keep it so.
type ReasonCode string

// Run (session, invocation, subagent, workflow, turn) codes.
var (
	RunCompletedExitZero      = register("run.completed.exit_zero", "the process exited with code 0.")
	RunFailedExitNonzero      = register("run.failed.exit_nonzero", "the process exited with a non-zero code.")
	RunFailedSignal           = register("run.failed.signal", "the process was killed by a signal other than SIGINT or SIGTERM.")
	RunFailedArtifactContract = register("run.failed.artifact_contract", "a required artifact was not produced or is invalid.")
	RunFailedOperator         = register("run.failed.operator", "an operator marked the run failed.")
	RunTimedOutDeadline       = register("run.timed_out.deadline", "the run exceeded its configured timeout.")
	RunAbortedSigint          = register("run.aborted.sigint", "the run was interrupted by SIGINT (exit 130); kept for stored rows and orchestrators, no longer emitted by exec (run.cancelled.sigint).")
	RunAbortedOperator        = register("run.aborted.operator", "an operator aborted the run.")
	RunCancelledSigterm       = register("run.cancelled.sigterm", "the run was cancelled by SIGTERM (exit 143).")
	RunCancelledSigint        = register("run.cancelled.sigint", "a user interrupted the run with SIGINT (exit 130): cancelled, as intended.")
	RunInterruptedSigint      = register("run.interrupted.sigint", "a user interrupted the run with SIGINT (exit 130), on a type whose word for that is interrupted.")
	RunInterruptedSigterm     = register("run.interrupted.sigterm", "the run was stopped by SIGTERM (exit 143), on a type whose word for that is interrupted.")
	RunCancelledOperator      = register("run.cancelled.operator", "an operator or orchestrator cancelled the run.")
	RunHealthProcessDead      = register("run.health.process_dead", "the recorded process is conclusively gone.")
	RunHealthPIDReused        = register("run.health.pid_reused", "the pid now belongs to another process (different start time).")
	RunHealthHostRebooted     = register("run.health.host_rebooted", "the host rebooted since the process started (different boot id).")
	RunHealthLivenessUnknown  = register("run.health.liveness_unknown", "liveness could not be decided (no pid yet, permission denied, unreadable /proc).")
	RunHealthDisconnected     = register("run.health.disconnected", "the process runs on another host and no fresh heartbeat arrived.")
	RunHealthStalled          = register("run.health.stalled", "no heartbeat for at least stalled_after.")
	RunHealthIdle             = register("run.health.idle", "no heartbeat for at least idle_after.")
	RunHealthSlow             = register("run.health.slow", "alive and heartbeating but running longer than slow_after.")
	RunHealthClockSkew        = register("run.health.clock_skew", "a heartbeat carries a time in the future; it was clamped.")
	RunHealthOrphaned         = register("run.health.orphaned", "the process is alive but its supervisor or parent entity is gone.")
	RunHealthStaleLock        = register("run.health.stale_lock", "a terminal entity's declared lock file still exists.")
	// RunHealthLeftoverProcesses is a finding beside the root's health (ADR-0044).
	RunHealthLeftoverProcesses = register("run.health.leftover_processes", "descendants of the entity's process are still running after the entity ended or its process died.")
	RunDeliveryMissing         = register("run.delivery.missing", "none of the required artifacts is present.")
	RunDeliveryPartial         = register("run.delivery.partial", "some but not all required artifacts are valid.")
	RunDeliveryInvalid         = register("run.delivery.invalid", "an artifact is present but fails validation or escapes the root.")
	RunDeliveryCheckStopped    = register("run.delivery.check_stopped", "the artifact check stopped at a bound (entries, depth, artifacts, time); delivery unknown.")
)

// System (watchdog's own enforcement) codes.
var (
	SystemHealthProcessDeadNoTerminal = register("system.health.process_dead_no_terminal", "the process died without recording a terminal state.")
	SystemHealthProcessDeadUnowned    = register("system.health.process_dead_unowned", "the process died and the entity's type has no end for a dead process: the operator records one.")
	SystemReaperPhantomProcessDead    = register("system.reaper.phantom_process_dead", "a phantom whose process is dead was reaped.")
	SystemReaperPhantomOrphaned       = register("system.reaper.phantom_orphaned", "a phantom whose process is orphaned was reaped.")
	SystemReaperOrphanKilled          = register("system.reaper.orphan_killed", "the reaper signalled an orphaned process (kill_orphans).")
	SystemOutcomeUnexplained          = register("system.outcome.unexplained", "the entity is in a failing outcome with no recorded reason (registered in it, e.g. imported).")
	// SystemHostDisconnected and SystemHostLost are the leader's findings on a
	// silent host's entities: never ends; its daemon judges them afresh.
	SystemHostDisconnected = register("system.host.disconnected", "the entity's host has a daemon that has been silent for host_disconnected_after; its work may still run.")
	SystemHostLost         = register("system.host.lost", "the entity's host has a daemon that has been silent for host_lost_after: nobody watches its work; see docs/fleet.md.")
)

// Codes of the orchestration entity types.
var (
	ShowFailedCriticalPathBlocked = register("show.failed.critical_path_blocked", "a critical-path play of the show failed.")
	ShowBlockedNoReadyPlays       = register("show.blocked.no_ready_plays", "the show is active but none of its plays can run.")
	PlayBlockedDependencyFailed   = register("play.blocked.dependency_failed", "a play in depends_on failed.")
	PlayBlockedDependencyInvalid  = register("play.blocked.dependency_invalid", "a play named in depends_on does not exist.")
	ScheduleHealthDue             = register("schedule.health.due", "the schedule's fire time passed and is within misfire_grace.")
	ScheduleHealthMisfired        = register("schedule.health.misfired", "a fire time passed more than misfire_grace ago without a fire.")
	TeamHealthOrphaned            = register("team.health.orphaned", "the team's parent show or play is terminal but the team is not.")
	AgentFailedProcessCrashed     = register("agent.failed.process_crashed", "the agent's backend process crashed.")
	AgentStoppedProcessExited     = register("agent.stopped.process_exited", "the agent's backend process exited cleanly.")
	TeamBlockedDependency         = register("team.blocked.dependency", "the team is waiting on work or a decision outside it.")
)

// Codes of the subagent, workflow and turn terminals no run code names.
var (
	SubagentInterruptedParent = register("subagent.interrupted.parent", "the parent or an operator interrupted the subagent.")
	SubagentDetachedUnmanaged = register("subagent.detached.unmanaged", "the subagent is no longer synchronously controlled by its manager.")
	WorkflowPartialOutcome    = register("workflow.partial.partial_outcome", "the workflow ended with a bounded partial result, not full completion.")
	TurnPartialFailedProvider = register("turn.partial_failed.provider_error", "the provider emitted useful text but the turn failed before clean completion.")
	TurnInterruptedOperator   = register("turn.interrupted.operator", "the operator or presenter interrupted the turn.")
)

// ReasonInfo is one registry entry: a code and the line that documents it.
type ReasonInfo struct {
	Code ReasonCode `json:"code"`
	Doc  string     `json:"doc"`
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

// registry holds every registered code; Go initialises it before the vars
// whose register calls use it.
var registry = map[ReasonCode]ReasonInfo{}

// register adds code to the registry and returns it: one line names and
// documents it. A malformed or duplicate code or an empty doc panics at
// start, a programming error no input can cause.
func register(code, doc string) ReasonCode {
	if err := addReason(registry, ReasonCode(code), doc); err != nil {
		panic("state: " + err.Error())
	}
	return ReasonCode(code)
}

// addReason checks one entry against the registry's invariants and adds it.
func addReason(m map[ReasonCode]ReasonInfo, code ReasonCode, doc string) error {
	if err := ValidateCode(string(code)); err != nil {
		return err
	}
	if _, dup := m[code]; dup {
		return fmt.Errorf("reason code %q registered twice", code)
	}
	if strings.TrimSpace(doc) == "" {
		return fmt.Errorf("reason code %q has no doc line", code)
	}
	m[code] = ReasonInfo{Code: code, Doc: doc}
	return nil
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

// ForeignTo names the entity type a code belongs to when that is not typ
// ("" when it fits): run, system and knowledge codes fit every type.
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

// Reserved reports whether code is one of the watchdog's own verdicts,
// which only its reaper may record: an audit row carrying one must mean the
// watchdog decided, never an orchestrator posing as it.
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
