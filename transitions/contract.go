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

// Contracts judges an entity's artifact contract at the moment of its
// end (issue 14, observation 3). The write path asks it before the
// database transaction, so file I/O never holds the write lock, and
// records the verdict inside it, with the end. The probe's artifact check
// satisfies it through an adapter (reaper.Contracts); this package may
// not import the probe.
type Contracts interface {
	// Judge evaluates e's contract as the files stand now. ok is false
	// when this host cannot judge it (another host's files, no
	// contract, a check its caller's context stopped): the stored
	// delivery then stands, to be judged where the files are.
	Judge(ctx context.Context, e store.Entity, now time.Time) (v Verdict, ok bool)
}

// Verdict is a contract's judgement at the end: the delivery, its
// findings with their evidence (the probe's run.delivery.* reasons) and,
// one line each, the artifacts that failed (what a refusal names).
type Verdict struct {
	Delivery state.Delivery
	Reasons  []state.StateReason
	Failing  []string
}

// judged is a verdict together with the contract it judged, so that the
// decision inside the transaction can tell a contract changed since.
type judged struct {
	Verdict
	root  string
	specs []state.ArtifactSpec
}

// judgeAtEnd evaluates the contract of the entity a terminal transition
// ends, when there is one to judge here; nil otherwise.
func (w *Writer) judgeAtEnd(ctx context.Context, g *Graph, req Request, at time.Time) *judged {
	if w.Contracts == nil || !g.IsTerminal(req.To) {
		return nil
	}
	cur, err := w.Store.Get(ctx, g.Type, req.ID)
	if err != nil || len(cur.Artifacts) == 0 || cur.Terminal {
		// A missing or unreadable row is reported by the transaction,
		// which reads it again; an ended one is refused there.
		return nil
	}
	v, ok := w.Contracts.Judge(ctx, cur, at)
	if !ok {
		return nil
	}
	return &judged{Verdict: v, root: cur.ArtifactsRoot, specs: cur.Artifacts}
}

// stillJudges says whether j judged the contract cur holds: a
// registration that changed the contract between the check and the
// transaction makes the verdict stale.
func (j *judged) stillJudges(cur store.Entity) bool {
	return j.root == cur.ArtifactsRoot && reflect.DeepEqual(j.specs, cur.Artifacts)
}

// record puts the verdict on the change: the delivery and its findings
// are stored with the end, in the same transaction.
func (j *judged) record(ch *store.Change) {
	ch.Delivery = &store.DeliveryRecord{Delivery: j.Delivery, Reasons: j.Reasons}
}

// refusal is why a full-completion type may not complete: its contract,
// judged now, did not pass.
func (j *judged) refusal(typ, id string) error {
	what := strings.Join(j.Failing, "; ")
	if what == "" {
		what = "delivery " + string(j.Delivery)
	}
	return fmt.Errorf("%s %s: completed is reserved for full completion, and its artifact contract does not pass (delivery %s: %s); send partial or failed", typ, id, j.Delivery, what)
}
