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

// listed is one entity of a list, rebuilt from its live.Ref for the page only.
type listed struct {
	ref live.Ref
	key wire.ListKey
	ns  state.NormalizedState
}

// page sorts items and returns up to limit after after, and the next cursor.
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

// writeList streams a list one item at a time, so a slow reader costs one
// item of memory, ending the page early before wire.MaxListBytes.
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

// mustJSON encodes v as the API does (no HTML escaping).
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // wire shapes: strings, numbers, finite floats
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}
