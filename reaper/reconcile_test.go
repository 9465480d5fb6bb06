package reaper

import (
	"testing"

	"watchdog/transitions"
)

// TestEveryReconcileRuleImplemented: a graph naming a rule the reaper
// does not know would have ReapPhantoms call a nil function.
func TestEveryReconcileRuleImplemented(t *testing.T) {
	for _, typ := range transitions.Types() {
		g, _ := transitions.Lookup(typ)
		if g.Reconcile == nil {
			continue
		}
		if reconcilers[g.Reconcile.Rule] == nil {
			t.Errorf("%s: reconcile rule %q has no reconciler", typ, g.Reconcile.Rule)
		}
		if !g.HasState(g.Reconcile.To) {
			t.Errorf("%s: reconcile target %q is not a state", typ, g.Reconcile.To)
		}
	}
}
