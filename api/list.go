package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/state"
	"watchdog/wire"
)

// listOrder is the order of GET /api/v1/entities.
//
//   - orderSeverity (the default) is wire.SortEntities: most severe first,
//     then most recently updated, then type and id: what a person or a
//     dashboard reads top-down. It is live: an entity whose severity or
//     updated_at changes during a walk (a heartbeat updates it) can move
//     across the cursor and be seen twice or not at all.
//   - orderID is by type, then id: every entity that exists throughout a
//     walk is returned exactly once, whatever changes meanwhile. A client
//     that needs the complete list walks this order.
type listOrder string

const (
	orderSeverity listOrder = "severity"
	orderID       listOrder = "id"
)

func parseOrder(v string) (listOrder, error) {
	switch listOrder(v) {
	case "", orderSeverity:
		return orderSeverity, nil
	case orderID:
		return orderID, nil
	}
	return "", errors.New("order " + quote(v) + " is not one of severity, id")
}

// listKey is an entity's place in a listOrder; a cursor is the key of the
// last entity of a page.
type listKey struct {
	Order   listOrder     `json:"o"`
	Rank    int           `json:"r,omitempty"`
	Updated unixtime.Time `json:"u,omitzero"`
	Type    string        `json:"t"`
	ID      string        `json:"i"`
}

// listed is one entity of a list with its derived state: from the live
// view (its entity rebuilt from ref for the page only).
type listed struct {
	ref     live.Ref
	typ, id string
	updated time.Time
	ns      state.NormalizedState
}

func keyOf(l listed, o listOrder) listKey {
	k := listKey{Order: o, Type: l.typ, ID: l.id}
	if o == orderSeverity {
		k.Rank, k.Updated = wire.SeverityKeyOf(l.ns, l.updated, l.typ, l.id).Rank, unixtime.Of(l.updated)
	}
	return k
}

// less orders keys of one listOrder: the severity order is
// wire.SeverityKey's.
func (a listKey) less(b listKey) bool {
	if a.Order == orderSeverity {
		return wire.SeverityKey{Rank: a.Rank, Updated: a.Updated.Time, Type: a.Type, ID: a.ID}.Less(
			wire.SeverityKey{Rank: b.Rank, Updated: b.Updated.Time, Type: b.Type, ID: b.ID})
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.ID < b.ID
}

// page sorts items in order and returns the limit of them that follow
// after (nil: from the first), and the cursor of the next page ("" when
// none follows). Only the page is turned into the wire shape, by the
// caller.
func page(items []listed, o listOrder, after *listKey, limit int) ([]listed, string) {
	keys := make([]listKey, len(items))
	for i := range items {
		keys[i] = keyOf(items[i], o)
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return keys[idx[i]].less(keys[idx[j]]) })
	start := 0
	if after != nil {
		start = sort.Search(len(idx), func(i int) bool { return after.less(keys[idx[i]]) })
	}
	idx = idx[start:]
	next := ""
	if len(idx) > limit {
		idx = idx[:limit]
		next = encodeCursor(keys[idx[len(idx)-1]])
	}
	out := make([]listed, len(idx))
	for i, j := range idx {
		out[i] = items[j]
	}
	return out, next
}

func encodeCursor(k listKey) string {
	b, _ := json.Marshal(k) // strings and numbers only: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of next; it must be one of this order.
func decodeCursor(c string, o listOrder) (listKey, error) {
	bad := errors.New("after " + quote(c) + " is not a cursor this list returned (pass its next as it is)")
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(c, "="))
	if err != nil {
		return listKey{}, bad
	}
	var k listKey
	if err := json.Unmarshal(b, &k); err != nil || k.Type == "" {
		return listKey{}, bad
	}
	if k.Order != o {
		return listKey{}, errors.New("after: the cursor belongs to order=" + string(k.Order) + "; keep the order of the walk")
	}
	return k, nil
}

// writeList answers a list as a stream (200): head's fields, then the n
// items made and encoded one at a time as they are written, so that a
// reader holds at most one item and the writer's buffer of the daemon's
// memory, however slowly it reads. The page ends early at the first item
// that would take it past wire.MaxListBytes (one item is always sent);
// next is then the cursor of the last item sent (cursor), as it is when
// more follow the n.
func writeList(w http.ResponseWriter, head wire.EntityList, n int, more bool, item func(int) wire.Entity, cursor func(int) string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `{"generated_at":%s,"total":%d,"items":[`, mustJSON(head.GeneratedAt), head.Total)
	sent, size := 0, 0
	for i := range n {
		b := mustJSON(item(i))
		if sent > 0 && size+len(b) > wire.MaxListBytes {
			more = true
			break
		}
		if sent > 0 {
			b = append([]byte{','}, b...)
		}
		if _, err := w.Write(b); err != nil {
			return // the client went away; nothing left to tell it
		}
		sent, size = sent+1, size+len(b)
	}
	next := ""
	if more && sent > 0 {
		next = cursor(sent - 1)
	}
	if next != "" {
		fmt.Fprintf(w, `],"next":%s}`+"\n", mustJSON(next))
		return
	}
	io.WriteString(w, "]}\n") //nolint:errcheck // the client went away; nothing left to tell it
}

// mustJSON encodes v as the API does (no HTML escaping); v is one of the
// wire shapes, which always encode.
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // wire shapes: strings, numbers, finite floats
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
