package transitions

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// Contracts judges an entity's artifact contract at its end. The write
// path asks it before the database transaction, so file I/O never holds
// the write lock, and records the verdict inside it, with the end.
type Contracts interface {
	// Judge evaluates e's contract as the files stand now. ok is false when
	// this host cannot judge it: the stored delivery then stands.
	Judge(ctx context.Context, e store.Entity, now time.Time) (v Verdict, ok bool)
}

// Verdict is a contract's judgement at the end: the delivery, its findings
// and the failing artifacts a refusal names.
type Verdict struct {
	Delivery state.Delivery
	Reasons  []state.StateReason
	Failing  []string
}

// judged is a verdict with the contract it judged, so the transaction can
// tell the contract changed since.
type judged struct {
	Verdict
	root  string
	specs []state.ArtifactSpec
}

// judgeAtEnd evaluates the contract a terminal transition ends, when there
// is one to judge here; nil otherwise.
func (w *Writer) judgeAtEnd(ctx context.Context, g *Graph, req Request, at time.Time) *judged {
	if w.Contracts == nil || !g.IsTerminal(req.To) {
		return nil
	}
	cur, err := w.Store.Get(ctx, g.Type, req.ID)
	if err != nil || len(cur.Artifacts) == 0 || cur.Terminal {
		// The transaction reads the row again and reports what is wrong.
		return nil
	}
	v, ok := w.Contracts.Judge(ctx, cur, at)
	if !ok {
		return nil
	}
	return &judged{Verdict: v, root: cur.ArtifactsRoot, specs: cur.Artifacts}
}

// stillJudges says whether j judged the contract cur holds: a
// registration between check and transaction makes the verdict stale.
func (j *judged) stillJudges(cur store.Entity) bool {
	return j.root == cur.ArtifactsRoot && reflect.DeepEqual(j.specs, cur.Artifacts)
}

// record puts the verdict on the change, stored with the end in the same
// transaction.
func (j *judged) record(ch *store.Change) {
	ch.Delivery = &store.DeliveryRecord{Delivery: j.Delivery, Reasons: j.Reasons}
}

// refusal is why a full-completion type may not complete.
func (j *judged) refusal(typ, id string) error {
	what := strings.Join(j.Failing, "; ")
	if what == "" {
		what = "delivery " + string(j.Delivery)
	}
	return fmt.Errorf("%s %s: completed is reserved for full completion, and its artifact contract does not pass (delivery %s: %s); send partial or failed", typ, id, j.Delivery, what)
}
