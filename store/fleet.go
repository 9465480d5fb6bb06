package store

import (
	"context"
	"sync/atomic"
	"time"

	"watchdog/state"
)

// Derived are the columns of an entity row that fleet-wide reads select and
// order by (ADR-0058). None depends on the read's time: age-out is in the query.
type Derived struct {
	// Type, ID and Revision name the row version derived from: a write of them
	// applies only while the row is still at that revision.
	Type, ID string
	Revision int64
	// Rank is the list's severity rank (wire.SeverityKey's Rank).
	Rank int
	// Severity is the derived severity; "" for a legacy entity.
	Severity state.Severity
	// Items is how many attention items the entity has (attention.ItemsFor).
	Items int
	// Expires, when not zero, is the arrival its items age out from.
	Expires time.Time
}

// ListQuery selects a page of the fleet-wide list in the severity order
// (wire.SeverityKey), or with ByID by type and id.
type ListQuery struct {
	// ByID orders by type and id (the key's Type and ID only).
	ByID bool
	// Hosts are the hosts whose entities are listed.
	Hosts Hosts
	// Type, when not "", keeps that type only.
	Type string
	// Severities, when not nil, keeps those severities (never legacy).
	Severities []state.Severity
	// After, when set, starts after that key.
	After *ListKey
	// Limit is the page's size.
	Limit int
	// NoCounts leaves Total, Before and Stale unread.
	NoCounts bool
}

// Page is a page of a list (limit+1 rows at most), its Total and Before
// counts, and Stale: rows needing derivation were seen (ADR-0058).
type Page struct {
	Rows          []Entity
	Total, Before int
	Stale         bool
}

// ListKey is a place in the severity order.
type ListKey struct {
	Rank     int
	Updated  time.Time
	Type, ID string
}

// FleetReader answers fleet-wide reads by index (ADR-0058). Rows whose
// revision moved since derivation are stale and derived again first.
type FleetReader interface {
	// StaleDerived returns up to limit stale rows of the hosts hs selects.
	StaleDerived(ctx context.Context, hs Hosts, limit int) ([]Entity, error)
	// SetDerived writes derived columns, each only while its row is at the
	// revision derived from; not a change of the entity (no revision, no feed).
	SetDerived(ctx context.Context, ds []Derived) error
	// ListPage returns q's page, its counts and Page.Stale, as one read sees them.
	ListPage(ctx context.Context, q ListQuery) (Page, error)
	// Scope says which hosts hs's entities are of (of typ, when not "") and
	// how many are legacy: the operator's page's host menu.
	Scope(ctx context.Context, hs Hosts, typ string) (hosts []string, legacy int, err error)
	// QueueCandidates returns the rows of hosts hs with attention items not aged
	// out at cut (the failure window's start).
	QueueCandidates(ctx context.Context, hs Hosts, cut time.Time) ([]Entity, error)
}

// derivation is the function the drivers derive a written row's columns
// with (SetDerivation).
var derivation atomic.Pointer[func(Entity) Derived]

// SetDerivation gives the drivers the function that derives an entity's
// columns, written in each write's transaction; without it rows stay stale.
func SetDerivation(fn func(Entity) Derived) { derivation.Store(&fn) }

// Derivation is the function SetDerivation gave, or nil.
func Derivation() func(Entity) Derived {
	if p := derivation.Load(); p != nil {
		return *p
	}
	return nil
}
