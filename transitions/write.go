package transitions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// Actors: who asks for a transition; closed, as it labels metrics and decides rights.
const (
	ActorOrchestrator = "orchestrator"
	ActorAdmin        = "admin"
	ActorReaper       = "reaper"
	ActorExec         = "exec"
)

// Actors lists every actor.
var Actors = []string{ActorOrchestrator, ActorAdmin, ActorReaper, ActorExec}

// reasonRequiredTargets need a reason code whoever asks: "why" comes first.
var reasonRequiredTargets = []string{
	"failed", "aborted", "timed_out", "cancelled", "interrupted",
	"partial_failed", "partial", "blocked", "detached",
}

// Request asks for one lifecycle change.
type Request struct {
	Type string
	ID   string
	To   string
	// Reason is optional except for reasonRequiredTargets and the reaper.
	Reason *state.StateReason
	// ExpectFrom, when set, makes a different stored lifecycle a conflict.
	ExpectFrom string
	Actor      string
	// Principal is who asks; it must be allowed to act on the entity.
	Principal Principal
	Trigger   string
	// Timeout and Elapsed describe a timed_out; unset, they are derived.
	Timeout time.Duration
	Elapsed time.Duration
	// Exit is how the process ended, as the caller saw it; never acted on.
	Exit *state.ExitStatus
}

// Result is an applied transition.
type Result struct {
	Before store.Entity
	After  store.Entity
}

// Observer hears about every transition and rejection (metrics).
type Observer interface {
	Transitioned(entityType, from, to, actor string)
	Rejected(entityType, cause string)
}

// Store is what the write path needs of a store; *sqlite.Store is one.
type Store interface {
	Get(ctx context.Context, typ, id string) (store.Entity, error)
	Register(ctx context.Context, e store.Entity, actor string, at time.Time) (created bool, err error)
	ApplyTransition(ctx context.Context, typ, id string, decide store.Decider) (before, after store.Entity, err error)
}

// Writer is the one write path for lifecycles; Store is required.
type Writer struct {
	Store    Store
	Now      func() time.Time
	Observer Observer
	// Ident fills in pid start time, host id and boot id at registration.
	Ident Identifier
	// PIDs proves who a registered pid runs as; nil checks nothing.
	PIDs PIDChecker
	// Contracts judges an artifact contract at every terminal transition.
	Contracts Contracts
}

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Transition validates and applies one lifecycle change: edge, reason code
// and the actor's rights, then a compare-and-set write with its audit row in
// one database transaction. Errors are errors.go's sentinels, wrapped.
func (w *Writer) Transition(ctx context.Context, req Request) (Result, error) {
	res, err := w.transition(ctx, req)
	if w.Observer != nil {
		// Metric labels come from closed vocabularies, never the caller's string.
		typ, ok := CanonicalType(req.Type)
		if !ok {
			typ = "unknown"
		}
		if err != nil {
			w.Observer.Rejected(typ, Cause(err))
		} else {
			w.Observer.Transitioned(typ, res.Before.LifecycleOr(""), res.After.LifecycleOr(""), req.Actor)
		}
	}
	return res, err
}

func (w *Writer) transition(ctx context.Context, req Request) (Result, error) {
	g, err := Lookup(req.Type)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateID(req.ID); err != nil {
		return Result{}, err
	}
	if !g.HasState(req.To) {
		return Result{}, fmt.Errorf("%w %q for %s (states: %s)", ErrUnknownState, req.To, g.Type, strings.Join(g.States, ", "))
	}
	if req.ExpectFrom != "" && !g.HasState(req.ExpectFrom) {
		return Result{}, fmt.Errorf("expect_from: %w %q for %s", ErrUnknownState, req.ExpectFrom, g.Type)
	}
	if !contains(Actors, req.Actor) {
		return Result{}, fmt.Errorf("%w: actor %q is not one of %s", ErrInvalidInput, req.Actor, strings.Join(Actors, ", "))
	}
	if !ValidTrigger(req.Trigger) {
		return Result{}, fmt.Errorf("%w: trigger %q is not one of %s", ErrInvalidInput, req.Trigger, strings.Join(Triggers, ", "))
	}
	if g.NeedsTrigger && req.Trigger == "" {
		return Result{}, fmt.Errorf("%w: an agent's transition needs a trigger, one of %s", ErrInvalidInput, strings.Join(Triggers, ", "))
	}
	// The floor for a request built in the program (ranges.go).
	if t := req.Timeout.Seconds(); !TimeoutRange().Contains(t) {
		return Result{}, TimeoutRange().Check("timeout_seconds", seconds(t), t)
	}
	if e := req.Elapsed.Seconds(); !ElapsedRange().Contains(e) {
		return Result{}, ElapsedRange().Check("elapsed_seconds", seconds(e), e)
	}
	var reason *state.StateReason
	if req.Reason != nil && (req.Reason.Code != "" || req.Reason.Message != "" || len(req.Reason.Evidence) > 0) {
		r := *req.Reason
		if r.Code == "" {
			return Result{}, fmt.Errorf("%w: a reason needs a code", ErrReasonRequired)
		}
		if err := state.CheckCode(string(r.Code)); err != nil {
			return Result{}, err
		}
		if owner := state.ForeignTo(r.Code, g.Type); owner != "" {
			return Result{}, fmt.Errorf("%w %q for a %s: it is a %s's code (use a %s, run or system code; see `watchdog reasons`)", ErrUnknownReason, r.Code, g.Type, owner, g.Type)
		}
		if state.Reserved(r.Code) && req.Actor != ActorReaper {
			return Result{}, fmt.Errorf("%w: %s is the watchdog's own verdict, recorded only by its reaper; an %s names its own cause (a %s or run code, see `watchdog reasons`)", ErrForbidden, r.Code, req.Actor, g.Type)
		}
		for i, ev := range r.Evidence {
			if !state.ValidEvidenceKind(ev.Kind) {
				return Result{}, fmt.Errorf("%w: reason.evidence[%d].kind %q is not one of %s", ErrInvalidInput, i, ev.Kind, strings.Join(state.EvidenceKinds, ", "))
			}
		}
		if r.ClaimStatus == "" {
			r.ClaimStatus = state.ClaimObserved
		}
		if r.Confidence == 0 {
			r.Confidence = 1
		}
		if r.Evidence == nil {
			r.Evidence = []state.EvidenceRef{}
		}
		r.EntityType, r.EntityID = g.Type, req.ID
		reason = &r
	}
	// Rights first: a forbidden target is 403 whatever else the request lacks.
	if req.Actor == ActorAdmin && len(g.AdminTargets) > 0 && !contains(g.AdminTargets, req.To) {
		return Result{}, fmt.Errorf("%w: an admin may move a %s only to %s, not %s", ErrForbidden, g.Type, strings.Join(g.AdminTargets, ", "), req.To)
	}
	if reason == nil && (contains(reasonRequiredTargets, req.To) || req.Actor == ActorReaper) {
		return Result{}, fmt.Errorf("%w: a transition to %s needs a reason code (see `watchdog reasons`)", ErrReasonRequired, req.To)
	}

	at := w.now()
	if req.Exit != nil {
		if err := w.recordExit(ctx, g, req, at); err != nil {
			return Result{}, err
		}
	}
	// Judged before the transaction: file I/O must not hold the write lock.
	verdict := w.judgeAtEnd(ctx, g, req, at)
	decide := func(cur store.Entity) (store.Change, error) {
		if cur.Lifecycle == nil {
			return store.Change{}, fmt.Errorf("%w: %s/%s is a legacy entity with no lifecycle to move from", ErrInvalidTransition, g.Type, req.ID)
		}
		if !req.Principal.MayActOn(&cur) {
			return store.Change{}, forbidActOn(req.Principal, &cur)
		}
		from := *cur.Lifecycle
		if req.ExpectFrom != "" && from != req.ExpectFrom {
			return store.Change{}, fmt.Errorf("%w: %s/%s is %s, not %s", ErrConflict, g.Type, req.ID, from, req.ExpectFrom)
		}
		if !g.Allowed(from, req.To) {
			next := "none: it is terminal"
			if t := g.Targets(from); len(t) > 0 {
				next = strings.Join(t, ", ")
			}
			return store.Change{}, fmt.Errorf("%w: %s %s -> %s is not allowed (from %s: %s)", ErrInvalidTransition, g.Type, from, req.To, from, next)
		}
		switch {
		case verdict != nil && !verdict.stillJudges(cur):
			return store.Change{}, fmt.Errorf("%w: %s/%s's artifact contract changed while it was judged; send the transition again", ErrConflict, g.Type, req.ID)
		case verdict != nil && g.FullCompletion && req.To == "completed" && verdict.Delivery != state.DeliveryPassed:
			return store.Change{}, fmt.Errorf("%w: %w", ErrInvalidTransition, verdict.refusal(g.Type, req.ID))
		case verdict == nil && g.Guard != nil:
			if err := g.Guard(req.To, cur); err != nil {
				return store.Change{}, fmt.Errorf("%w: %w", ErrInvalidTransition, err)
			}
		}
		ch := store.Change{To: req.To, Terminal: g.IsTerminal(req.To), Starts: g.Starts(req.To), Reason: reason, Actor: req.Actor, Principal: req.Principal.Name, Trigger: req.Trigger, At: at}
		if verdict != nil {
			verdict.record(&ch)
		}
		if req.To == "timed_out" {
			timeout := req.Timeout
			if timeout == 0 {
				timeout = cur.Timeout
			}
			if timeout <= 0 && g.NeedsTimeout {
				return store.Change{}, fmt.Errorf("%w: a %s's timed_out needs the configured timeout (register timeout_seconds or pass it with the transition)", ErrInvalidTransition, g.Type)
			}
			elapsed := req.Elapsed
			if elapsed == 0 {
				start := cur.StartedAt
				if start.IsZero() {
					start = cur.CreatedAt
				}
				elapsed = max(0, at.Sub(start))
			}
			ch.Timeout, ch.TimeoutElapsed = max(timeout, 0), elapsed
			if ch.Reason != nil {
				r := *ch.Reason
				detail := fmt.Sprintf("timed out after %.1fs (configured timeout %gs)", elapsed.Seconds(), timeout.Seconds())
				if timeout <= 0 {
					detail = fmt.Sprintf("timed out after %.1fs (the timeout was not told to the watchdog)", elapsed.Seconds())
				}
				r.Evidence = append(append([]state.EvidenceRef(nil), r.Evidence...), state.EvidenceRef{
					Kind: state.EvidenceToolResult, Detail: detail,
				})
				ch.Reason = &r
			}
		}
		return ch, nil
	}
	before, after, err := w.Store.ApplyTransition(ctx, g.Type, req.ID, decide)
	if err != nil {
		return Result{}, err
	}
	return Result{Before: before, After: after}, nil
}

// observer is the store's RecordObservation (a test's fake may lack it).
type observer interface {
	RecordObservation(ctx context.Context, typ, id string, o store.Observation) (bool, error)
}

// recordExit records req.Exit on the open entity: the exit status its
// parent saw, which the daemon's pidfd may never learn. Written before the
// transition; a crash between the two leaves an open entity whose death is
// known, which the reaper ends as it would have.
func (w *Writer) recordExit(ctx context.Context, g *Graph, req Request, at time.Time) error {
	x := *req.Exit
	if x.Code < 0 || x.Code > 255 || x.Signal < 0 || x.Signal > 64 {
		return fmt.Errorf("%w: exit_status: code %d, signal %d: want a code from 0 to 255 or a signal from 1 to 64", ErrInvalidInput, x.Code, x.Signal)
	}
	if x.At.IsZero() || x.At.After(at) {
		x.At = at
	}
	cur, err := w.Store.Get(ctx, g.Type, req.ID)
	if err != nil || cur.PID <= 0 || cur.Terminal || cur.Lifecycle == nil || !req.Principal.MayActOn(&cur) {
		return nil // the transition itself says what is wrong, if anything
	}
	if state.SameExit(cur.Exit, &x) {
		return nil
	}
	o := store.Observation{SeenSeq: cur.LastSeq, At: at, Exit: &x, PID: cur.PID, Runner: true}
	rx, ok := w.Store.(observer)
	if !ok {
		return nil
	}
	if _, err := rx.RecordObservation(ctx, g.Type, req.ID, o); err != nil {
		return fmt.Errorf("record the exit status of %s/%s: %w", g.Type, req.ID, err)
	}
	return nil
}
