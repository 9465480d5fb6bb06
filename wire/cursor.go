package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

// ListOrder is an order of the entity list (?order=). OrderSeverity, the
// default, is live: an entity changing during a walk may be seen twice or
// not at all; OrderID returns every entity exactly once.
type ListOrder string

// The list's orders.
const (
	OrderSeverity ListOrder = "severity"
	OrderID       ListOrder = "id"
)

// ListOrders are the list's orders, the default first.
var ListOrders = []ListOrder{OrderSeverity, OrderID}

// ParseOrder reads ?order=; "" is the default.
func ParseOrder(v string) (ListOrder, error) {
	switch o := ListOrder(v); o {
	case "":
		return OrderSeverity, nil
	case OrderSeverity, OrderID:
		return o, nil
	}
	return "", fmt.Errorf("order %q is not one of %s, %s", v, OrderSeverity, OrderID)
}

// ListKey is an entity's place in a ListOrder; a cursor (?after=) is a page's last key.
type ListKey struct {
	Order   ListOrder     `json:"o"`
	Rank    int           `json:"r,omitempty"`
	Updated unixtime.Time `json:"u,omitzero"`
	Type    string        `json:"t"`
	ID      string        `json:"i"`
}

// ListKeyOf is the key in order o of an entity with state ns.
func ListKeyOf(o ListOrder, ns state.NormalizedState, updated time.Time, typ, id string) ListKey {
	k := ListKey{Order: o, Type: typ, ID: id}
	if o == OrderSeverity {
		// To the microsecond, as a cursor and the store's column carry it.
		k.Rank, k.Updated = ns.ListRank(), unixtime.Of(updated.Truncate(unixtime.Precision))
	}
	return k
}

// Less says a comes before b, both of one order.
func (a ListKey) Less(b ListKey) bool {
	if a.Order == OrderSeverity {
		return SeverityKey{Rank: a.Rank, Updated: a.Updated.Time, Type: a.Type, ID: a.ID}.Less(
			SeverityKey{Rank: b.Rank, Updated: b.Updated.Time, Type: b.Type, ID: b.ID})
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.ID < b.ID
}

// Store is k as the store's list by index starts after it.
func (k ListKey) Store() *store.ListKey {
	return &store.ListKey{Rank: k.Rank, Updated: k.Updated.Time, Type: k.Type, ID: k.ID}
}

// Cursor is k as ?after= carries it.
func (k ListKey) Cursor() string {
	b, _ := json.Marshal(k) // strings and numbers only: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor reads an ?after= that Cursor wrote, of order o.
func ParseCursor(c string, o ListOrder) (ListKey, error) {
	var k ListKey
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(c, "="))
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil || k.Type == "" {
		return ListKey{}, fmt.Errorf("after %q is not a cursor this list wrote (pass its next, or follow its Next link, as it is)", c)
	}
	if k.Order != o {
		return ListKey{}, fmt.Errorf("after: the cursor belongs to order=%s; keep the order while paging", k.Order)
	}
	return k, nil
}
