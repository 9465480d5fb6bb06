package attention

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"watchdog/store"
)

// ErrBadFingerprint is returned by Dismiss for a fingerprint that is not
// <entity_type>:<entity_id>:<reason_code>.
var ErrBadFingerprint = errors.New("bad fingerprint")

// ErrNoItem is returned by Dismiss when no current item has the
// fingerprint: the condition cleared, aged out or never existed.
var ErrNoItem = errors.New("no attention item")

// DismissStore is the part of a store Dismiss reads and writes.
type DismissStore interface {
	Get(ctx context.Context, typ, id string) (store.Entity, error)
	UpsertDismissal(ctx context.Context, d store.Dismissal) error
}

// Dismissing is one snooze or dismissal asked for.
type Dismissing struct {
	Fingerprint string
	// Until is the snooze's end; zero dismisses.
	Until time.Time
	// ClearOnStatusChange shows the item again when the entity's status
	// changes before the snooze ends (or, for a dismissal, at all).
	ClearOnStatusChange bool
	// By is who asked (the dismissal row's dismissed_by).
	By string
}

// Dismiss records a snooze (Until set) or dismissal of the item
// r.Fingerprint names, which must be in the queue now (or subsumed there):
// else ErrNoItem, so a typo cannot silence a future item.
func Dismiss(ctx context.Context, st DismissStore, r Dismissing, now time.Time, window time.Duration) (store.Dismissal, error) {
	typ, id, code, err := ParseFingerprint(r.Fingerprint)
	if err != nil {
		return store.Dismissal{}, &kindError{err: err, kind: ErrBadFingerprint}
	}
	e, err := st.Get(ctx, typ, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Dismissal{}, err
	}
	var item *Item
	var occurrence time.Time
	if err == nil {
		item, occurrence = find(ItemsOf(e, now, window), r.Fingerprint)
	}
	if item == nil {
		return store.Dismissal{}, &kindError{kind: ErrNoItem,
			err: fmt.Errorf("no attention item has fingerprint %s (it may have cleared or aged out)", strconv.Quote(r.Fingerprint))}
	}
	d := store.Dismissal{
		Fingerprint: r.Fingerprint, EntityType: typ, EntityID: id, ReasonCode: string(code),
		StatusAtDismissal: item.Status, SnoozedUntil: r.Until,
		DismissedAt: now, DismissedBy: r.By,
		ClearOnStatusChange: r.ClearOnStatusChange,
		Occurrence:          occurrence,
	}
	if err := st.UpsertDismissal(ctx, d); err != nil {
		return store.Dismissal{}, err
	}
	return d, nil
}

// find returns the item a dismissal of fp hides and the occurrence to
// record: fp's own item, else the one subsuming fp's finding (Carries).
func find(items []Item, fp string) (*Item, time.Time) {
	for i := range items {
		if items[i].Fingerprint == fp {
			return &items[i], items[i].FirstSeenAt.Time
		}
	}
	for i := range items {
		for _, s := range items[i].subsumed {
			if s.fingerprint == fp {
				return &items[i], s.onset
			}
		}
	}
	return nil, time.Time{}
}

// kindError is a sentence that is one of the sentinels: the API and the
// CLI print the sentence and decide the status or exit by the sentinel.
type kindError struct{ err, kind error }

func (e *kindError) Error() string { return e.err.Error() }

func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }
