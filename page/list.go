package page

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/state"
	"watchdog/wire"
)

// The table's orders (?order=), the API list's own two (GET
// /api/v1/entities): by severity (wire.SeverityKey, the default), or by
// type and id.
const (
	orderSeverity = "severity"
	orderID       = "id"
)

// Orders are the table's orders, the default first.
var Orders = []string{orderSeverity, orderID}

// rowKey is an entity's place in an order; a cursor (?after=) is the key
// of the last row of a page.
type rowKey struct {
	Order   string        `json:"o"`
	Rank    int           `json:"r,omitempty"`
	Updated unixtime.Time `json:"u,omitzero"`
	Type    string        `json:"t"`
	ID      string        `json:"i"`
}

func (a rowKey) less(b rowKey) bool {
	if a.Order == orderSeverity {
		return wire.SeverityKey{Rank: a.Rank, Updated: a.Updated.Time, Type: a.Type, ID: a.ID}.Less(
			wire.SeverityKey{Rank: b.Rank, Updated: b.Updated.Time, Type: b.Type, ID: b.ID})
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.ID < b.ID
}

func keyOf(order string, ns state.NormalizedState, updated time.Time, typ, id string) rowKey {
	k := rowKey{Order: order, Type: typ, ID: id}
	if order == orderSeverity {
		k.Rank = wire.SeverityKeyOf(ns, updated, typ, id).Rank
		// The cursor carries the time as the wire does (Unix seconds, to
		// the microsecond): the key compared must be the one a cursor
		// decodes to.
		k.Updated = unixtime.Of(updated.Truncate(unixtime.Precision))
	}
	return k
}

func encodeCursor(k rowKey) string {
	b, _ := json.Marshal(k) // strings and numbers only: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads an ?after= this page wrote, of order.
func decodeCursor(c, order string) (rowKey, error) {
	bad := errors.New("after " + strconv.Quote(c) + " is not a link this page wrote (follow its Next link)")
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(c, "="))
	if err != nil {
		return rowKey{}, bad
	}
	var k rowKey
	if err := json.Unmarshal(b, &k); err != nil || k.Type == "" {
		return rowKey{}, bad
	}
	if k.Order != order {
		return rowKey{}, errors.New("after: the link belongs to order=" + k.Order + "; keep the order while paging")
	}
	return k, nil
}

// row is one selected entity: its key and the view's record of it, rebuilt
// only when it is on the page.
type row struct {
	key rowKey
	ref live.Ref
	ns  state.NormalizedState
}

// pageOf is the selection's page of at most limit rows that follow after
// (nil: the first page), in key order, without sorting the selection: one
// pass keeping the limit+1 smallest keys (so a page at 100,000 entities
// costs a walk, not a sort). before counts the selected rows ahead of the
// page; more says a page follows.
type pageOf struct {
	limit  int
	after  *rowKey
	rows   []row // sorted, at most limit+1
	before int
	total  int
}

func (p *pageOf) add(r row) {
	p.total++
	if p.after != nil && !p.after.less(r.key) {
		p.before++
		return
	}
	n := len(p.rows)
	if n == p.limit+1 && !r.key.less(p.rows[n-1].key) {
		return
	}
	i, _ := slices.BinarySearchFunc(p.rows, r.key, func(x row, k rowKey) int {
		if x.key.less(k) {
			return -1
		}
		return 1
	})
	if n == p.limit+1 {
		p.rows = p.rows[:n-1]
	}
	p.rows = slices.Insert(p.rows, i, r)
}

// page is the rows shown and the cursor of the next page ("" when none).
func (p *pageOf) page() ([]row, string) {
	if len(p.rows) > p.limit {
		return p.rows[:p.limit], encodeCursor(p.rows[p.limit-1].key)
	}
	return p.rows, ""
}
