package reaper

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"go.uber.org/zap"

	"watchdog/judge"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// reconciler settles one entity by what its relatives say, moving it to to.
type reconciler func(r *Reaper, ctx context.Context, e store.Entity, rec *transitions.Reconciliation, parents parentCache) (Action, state.StateReason, bool)

// reconcilers implements each rule a graph may name in its Reconcile.
var reconcilers = map[string]reconciler{
	transitions.ReconcileParentEnded:  (*Reaper).orphanedTeam,
	transitions.ReconcileDependency:   (*Reaper).blockedPlay,
	transitions.ReconcileCriticalPath: (*Reaper).failedShow,
}

// reconciliation is the graph's Reconcile rule for e's type, or nil.
func reconciliation(e store.Entity) *transitions.Reconciliation {
	g, err := transitions.Lookup(e.Type)
	if err != nil {
		return nil
	}
	return g.Reconcile
}

// reconciled are the types with a Reconcile rule: their relatives, not their
// row, say when they are due.
var reconciled = func() []string {
	var out []string
	for _, t := range transitions.Types() {
		if g, _ := transitions.Lookup(t); g.Reconcile != nil {
			out = append(out, t)
		}
	}
	return out
}()

// orphanedTeam closes a team whose parent show or play is finished: it has
// an outcome (a show completed, merged or failed counts, archived or not).
func (r *Reaper) orphanedTeam(ctx context.Context, e store.Entity, rec *transitions.Reconciliation, parents parentCache) (Action, state.StateReason, bool) {
	to := rec.To
	if e.ParentID == "" || !slices.Contains(rec.ParentTypes, e.ParentType) || !parents.terminal(e) {
		return Action{}, state.StateReason{}, false
	}
	if e.HasOwnerUID && e.OwnerUID != 0 {
		// A parent another user registered under the name this team
		// gave does not close it.
		if p, err := r.Store.Get(ctx, e.ParentType, e.ParentID); err != nil || !transitions.OwnersAgree(&e, &p) {
			return Action{}, state.StateReason{}, false
		}
	}
	detail := fmt.Sprintf("parent %s/%s is finished", e.ParentType, e.ParentID)
	a := Action{Type: e.Type, ID: e.ID, From: e.LifecycleOr(""), To: to, Reason: state.TeamHealthOrphaned, Detail: detail}
	return a, state.Observed(state.TeamHealthOrphaned, detail, state.EvidenceRef{Kind: state.EvidenceToolResult, ID: e.ParentType + "/" + e.ParentID, Detail: detail}), true
}

// blockedPlay blocks a queued play a dependency of which ended without its
// work or does not exist.
func (r *Reaper) blockedPlay(ctx context.Context, e store.Entity, rec *transitions.Reconciliation, _ parentCache) (Action, state.StateReason, bool) {
	to := rec.To
	from := e.LifecycleOr("")
	if len(e.DependsOn) == 0 || (from != "planned" && from != "queued") {
		return Action{}, state.StateReason{}, false
	}
	deps := append([]string(nil), e.DependsOn...)
	sort.Strings(deps)
	for _, dep := range deps {
		d, err := r.Store.Get(ctx, "play", dep)
		var code state.ReasonCode
		var detail string
		switch {
		case err != nil:
			code, detail = state.PlayBlockedDependencyInvalid, fmt.Sprintf("dependency play/%s does not exist", dep)
		case judge.FailedFor(&d):
			code, detail = state.PlayBlockedDependencyFailed, fmt.Sprintf("dependency play/%s ended %s", dep, d.LifecycleOr(""))
		default:
			continue
		}
		a := Action{Type: e.Type, ID: e.ID, From: from, To: to, Reason: code, Detail: detail}
		return a, state.Observed(code, detail, state.EvidenceRef{Kind: state.EvidenceToolResult, ID: "play/" + dep, Detail: detail}), true
	}
	return Action{}, state.StateReason{}, false
}

// failedShow fails an active show one of whose critical-path plays ended
// without its work.
func (r *Reaper) failedShow(ctx context.Context, e store.Entity, rec *transitions.Reconciliation, _ parentCache) (Action, state.StateReason, bool) {
	to := rec.To
	if e.LifecycleOr("") != "active" {
		return Action{}, state.StateReason{}, false
	}
	// A show's plays may run on other hosts: they are read here, not
	// probed, and only the show (of this host) is written.
	plays, err := r.Store.List(ctx, store.Filter{Type: "play", ParentType: "show", ParentID: e.ID})
	if err != nil {
		r.log().Warn("list plays of show", zap.String("show", e.ID), zap.Error(err))
		return Action{}, state.StateReason{}, false
	}
	for _, p := range plays {
		if !judge.FailedFor(&p) || !criticalPath(p) || !transitions.OwnersAgree(&p, &e) {
			continue
		}
		detail := fmt.Sprintf("critical-path play/%s ended %s", p.ID, p.LifecycleOr(""))
		a := Action{Type: e.Type, ID: e.ID, From: "active", To: to, Reason: state.ShowFailedCriticalPathBlocked, Detail: detail}
		return a, state.Observed(state.ShowFailedCriticalPathBlocked, detail, state.EvidenceRef{Kind: state.EvidenceToolResult, ID: "play/" + p.ID, Detail: detail}), true
	}
	return Action{}, state.StateReason{}, false
}

func criticalPath(e store.Entity) bool {
	var m struct {
		CriticalPath bool `json:"critical_path"`
	}
	return len(e.Metadata) > 0 && json.Unmarshal(e.Metadata, &m) == nil && m.CriticalPath
}
