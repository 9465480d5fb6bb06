package store

import (
	"context"
	"sync/atomic"
	"time"

	"watchdog/state"
)

// Derived are the columns of an entity row that a fleet-wide read
// selects and orders by (ADR-0058): what the live view derives of the
// row (live.Columns, from live.Derive), stored beside it and indexed.
// Nothing in them depends on the time of a read: the failure window's
// age-out is applied in the query, with the reader's now.
type Derived struct {
	// Type, ID and Revision name the row and the version of it the
	// columns were derived from: a write of them applies only while the
	// row is still at that revision.
	Type, ID string
	Revision int64
	// Rank is the list's severity rank (wire.SeverityKey's Rank: the
	// severity's place, legacy last).
	Rank int
	// Severity is the derived severity; "" for a legacy entity, which a
	// severity filter never keeps.
	Severity state.Severity
	// Items is how many attention items the entity has before the
	// failure window and dismissals (attention.ItemsFor): 0 keeps it out
	// of the queue's candidates.
	Items int
	// Expires, when not zero, is the arrival its items age out from (an
	// outcome that does not linger); zero: they never age out while the
	// row stays as it is (open, or lingering).
	Expires time.Time
}

// ListQuery selects a page of the fleet-wide list in the severity order
// (wire.SeverityKey: rank, most recently updated, type, id), or with ByID
// by type and id.
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
	// NoCounts leaves the page's Total and Before (and Stale) unread:
	// a second read of a page whose counts the first one read.
	NoCounts bool
}

// Page is a page of a list: limit+1 rows at most (the extra one says a
// page follows), how many rows the filter selects in all, and how many of
// them come before the page (0 without After). Stale says the hosts the
// query selects had rows whose derived columns were stale when it read
// them (StaleDerived would return some): the page may be out of order, and
// the reader derives them and asks again (ADR-0058). The check rides with
// the page, so a read that finds none, the rule, is one query.
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

// FleetReader is what answers the fleet-wide reads by index instead of
// by a view of every entity (ADR-0058); the SQLite store implements it.
// A row's derived columns are stale when its revision moved since they
// were written (a writer that does not derive, an older binary, a
// database upgraded to them): the reader derives those again first.
type FleetReader interface {
	// StaleDerived returns up to limit rows whose derived columns are
	// stale, of the hosts hs selects.
	StaleDerived(ctx context.Context, hs Hosts, limit int) ([]Entity, error)
	// SetDerived writes derived columns, each only while its row is at
	// the revision it was derived from; the write is no change of the
	// entity (no new revision, nothing on the feed).
	SetDerived(ctx context.Context, ds []Derived) error
	// ListPage returns the page q selects, its counts and whether the
	// hosts q selects have stale rows (Page.Stale), all as one read
	// sees them.
	ListPage(ctx context.Context, q ListQuery) (Page, error)
	// Scope says which hosts the entities of the hosts hs selects are of
	// (of type typ only, when not ""; the host-less ones left out), and
	// how many of them (every type) are legacy: the operator's page's host
	// menu and legacy count.
	Scope(ctx context.Context, hs Hosts, typ string) (hosts []string, legacy int, err error)
	// QueueCandidates returns the rows of the hosts hs selects that have
	// attention items not aged out at cut (the start of the failure
	// window): every entity the queue at a now whose window starts at
	// cut or later can show.
	QueueCandidates(ctx context.Context, hs Hosts, cut time.Time) ([]Entity, error)
}

// derivation is the function the drivers derive a written row's columns
// with (SetDerivation).
var derivation atomic.Pointer[func(Entity) Derived]

// SetDerivation gives the drivers the function that derives an entity's
// columns (live.Columns, set by whoever opens the store: the daemon and
// the CLI): each write of an entity then writes its columns in the same
// transaction. Without it the rows written stay stale, and the fleet-wide
// reader derives them.
func SetDerivation(fn func(Entity) Derived) { derivation.Store(&fn) }

// Derivation is the function SetDerivation gave, or nil.
func Derivation() func(Entity) Derived {
	if p := derivation.Load(); p != nil {
		return *p
	}
	return nil
}
