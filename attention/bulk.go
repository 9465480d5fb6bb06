package attention

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"watchdog/state"
	"watchdog/store"
)

// MaxBulk is how many fingerprints one bulk snooze or dismissal may list;
// a cluster key is not bounded by it.
const MaxBulk = 1000

// ErrTooMany is returned by DismissAll for more than MaxBulk fingerprints.
var ErrTooMany = errors.New("too many fingerprints")

// ErrBadCluster is returned for a cluster key that names no reason code.
var ErrBadCluster = errors.New("bad cluster key")

// BulkStore is the part of a store DismissAll reads and writes.
type BulkStore interface {
	Get(ctx context.Context, typ, id string) (store.Entity, error)
	UpsertDismissals(ctx context.Context, ds []store.Dismissal) (string, error)
}

// Bulk is one bulk snooze or dismissal: several items, one action.
type Bulk struct {
	// Fingerprints are the items; duplicates count once.
	Fingerprints []string
	// Until is the snooze's end; zero dismisses.
	Until time.Time
	// ClearOnStatusChange, as Dismissing's, for every item.
	ClearOnStatusChange bool
	// By is who asked, recorded on every row and every triage log entry.
	By string
}

// Bulked is what DismissAll wrote: the rows, in the order asked, and the
// batch id their triage log rows share.
type Bulked struct {
	Batch      string
	Dismissals []store.Dismissal
}

// DismissAll snoozes (b.Until set) or dismisses every item b.Fingerprints
// names by Dismiss's rule, all or none: any bad or missing fingerprint is
// an error naming every such one, and nothing is written; else all rows and
// their triage log entries are written in one transaction.
func DismissAll(ctx context.Context, st BulkStore, b Bulk, now time.Time, window time.Duration) (Bulked, error) {
	fps := dedupe(b.Fingerprints)
	if len(fps) == 0 {
		return Bulked{}, &kindError{kind: ErrBadFingerprint, err: errors.New("no fingerprint given")}
	}
	if len(fps) > MaxBulk {
		return Bulked{}, &kindError{kind: ErrTooMany,
			err: fmt.Errorf("%d fingerprints in one request; at most %d (a cluster key has no limit)", len(fps), MaxBulk)}
	}
	var bad []string
	for _, fp := range fps {
		if _, _, _, err := ParseFingerprint(fp); err != nil {
			bad = append(bad, strconv.Quote(fp))
		}
	}
	if len(bad) > 0 {
		return Bulked{}, &kindError{kind: ErrBadFingerprint,
			err: fmt.Errorf("%s not <entity_type>:<entity_id>:<reason_code>: nothing was snoozed or dismissed", names(bad, "is", "are"))}
	}
	// One read per entity, however many of its items are named.
	type key struct{ typ, id string }
	items := map[key][]Item{}
	ds := make([]store.Dismissal, 0, len(fps))
	var missing []string
	for _, fp := range fps {
		typ, id, code, _ := ParseFingerprint(fp) // checked above
		k := key{typ, id}
		its, seen := items[k]
		if !seen {
			e, err := st.Get(ctx, typ, id)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return Bulked{}, err
			}
			if err == nil {
				its = ItemsOf(e, now, window)
			}
			items[k] = its
		}
		item, occurrence := find(its, fp)
		if item == nil {
			missing = append(missing, strconv.Quote(fp))
			continue
		}
		ds = append(ds, store.Dismissal{
			Fingerprint: fp, EntityType: typ, EntityID: id, ReasonCode: string(code),
			StatusAtDismissal: item.Status, SnoozedUntil: b.Until,
			DismissedAt: now, DismissedBy: b.By,
			ClearOnStatusChange: b.ClearOnStatusChange,
			Occurrence:          occurrence,
		})
	}
	if len(missing) > 0 {
		return Bulked{}, &kindError{kind: ErrNoItem,
			err: fmt.Errorf("no attention item has fingerprint %s (cleared, aged out or never existed): nothing was snoozed or dismissed", strings.Join(missing, ", "))}
	}
	batch, err := st.UpsertDismissals(ctx, ds)
	if err != nil {
		return Bulked{}, err
	}
	return Bulked{Batch: batch, Dismissals: ds}, nil
}

// ParseCluster reads a cluster key (a cluster_id or its bare, registered
// reason code) and returns the cluster_id.
func ParseCluster(key string) (string, error) {
	code := strings.TrimPrefix(strings.TrimSpace(key), "cluster_")
	if err := state.CheckCode(code); err != nil {
		return "", &kindError{kind: ErrBadCluster,
			err: fmt.Errorf("cluster %q names no reason code (a cluster_id of watchdog attention --json, or its reason code): %v", key, err)}
	}
	return ClusterID(state.ReasonCode(code)), nil
}

// ClusterQuery is the query whose queue holds every item a cluster action
// covers: no limit, none a dismissal already hides.
func ClusterQuery(window time.Duration) Query {
	return Query{Limit: math.MaxInt32, FailureWindow: window}
}

// ClusterMembers are the fingerprints of q's items in cluster id, in queue
// order; a cluster with none is ErrNoItem.
func ClusterMembers(q Queue, id string) ([]string, error) {
	var out []string
	for i := range q.Items {
		if q.Items[i].ClusterID == id && !q.Items[i].Dismissed {
			out = append(out, q.Items[i].Fingerprint)
		}
	}
	if len(out) == 0 {
		return nil, &kindError{kind: ErrNoItem,
			err: fmt.Errorf("cluster %s has no item in the queue now (none, or all already snoozed or dismissed)", id)}
	}
	return out, nil
}

func dedupe(fps []string) []string {
	seen := make(map[string]bool, len(fps))
	out := make([]string, 0, len(fps))
	for _, fp := range fps {
		fp = strings.TrimSpace(fp)
		if !seen[fp] {
			seen[fp] = true
			out = append(out, fp)
		}
	}
	return out
}

// names lists quoted fingerprints with the verb agreeing.
func names(q []string, one, many string) string {
	if len(q) == 1 {
		return q[0] + " " + one
	}
	return strings.Join(q, ", ") + " " + many
}
