package wire

import (
	"errors"
	"strings"
	"testing"
)

// TestDocumentsRefusedNotAltered: what encoding/json would accept by
// changing it is refused, naming the field (issue 37); the same documents
// without the fault decode.
func TestDocumentsRefusedNotAltered(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      error
		field     string
	}{
		{"duplicate id", `{"type":"session","id":"dupk","id":"dupk2"}`, ErrBadInput, `id is given twice`},
		{"duplicate by case", `{"type":"session","id":"a","ID":"b"}`, ErrBadInput, `ID is given twice`},
		{"duplicate in metadata", `{"type":"session","id":"a","metadata":{"k":1,"x":{"y":1,"y":2}}}`, ErrBadInput, `metadata.x.y is given twice`},
		{"invalid UTF-8 label", "{\"type\":\"session\",\"id\":\"a\",\"label\":\"x\xffy\"}", ErrBadInput, `label is not valid UTF-8`},
		{"lone surrogate", `{"type":"session","id":"a","label":"x\udc00y"}`, ErrBadInput, `label is not valid UTF-8`},
		{"invalid UTF-8 in a list", "{\"type\":\"session\",\"id\":\"a\",\"lock_files\":[\"/ok\",\"/b\xc3\"]}", ErrBadInput, `lock_files[1] is not valid UTF-8`},
		{"infinite metadata", `{"type":"session","id":"a","metadata":{"n":1e400}}`, ErrOverLimit, `metadata.n: 1e400 is not a number a float64 holds`},
	} {
		var r Register
		err := Decode(strings.NewReader(tc.doc), &r, false)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want %v naming %q", tc.name, err, tc.want, tc.field)
		}
	}
	for _, doc := range []string{
		`{"type":"session","id":"a","label":"caf\u00e9 \ud83d\ude00 ok","metadata":{"n":1e300,"k":{"a":1,"b":[1,2,{"a":1}]}}}`,
		`{"type":"session","id":"a","lock_files":["/x","/y"],"depends_on":[]}`,
	} {
		var r Register
		if err := Decode(strings.NewReader(doc), &r, false); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
