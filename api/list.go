package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"

	"watchdog/live"
	"watchdog/state"
	"watchdog/wire"
)

// listed is one entity of a list with its derived state: from the live
// view (its entity rebuilt from ref for the page only), and its key.
type listed struct {
	ref live.Ref
	key wire.ListKey
	ns  state.NormalizedState
}

// page sorts items by key and returns the limit of them that follow after
// (nil: from the first), and the cursor of the next page ("" when none
// follows). Only the page is turned into the wire shape, by the caller.
func page(items []listed, after *wire.ListKey, limit int) ([]listed, string) {
	sort.SliceStable(items, func(i, j int) bool { return items[i].key.Less(items[j].key) })
	if after != nil {
		items = items[sort.Search(len(items), func(i int) bool { return after.Less(items[i].key) }):]
	}
	next := ""
	if len(items) > limit {
		items = items[:limit]
		next = items[limit-1].key.Cursor()
	}
	return items, next
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
