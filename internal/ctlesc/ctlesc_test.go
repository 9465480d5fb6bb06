package ctlesc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"},
		{"boom \x1b[31mRED\x07", `boom \u001b[31mRED\u0007`},
		{"\x1b]0;title\x07", `\u001b]0;title\u0007`},
		{"cr\rdel\x7f", `cr\u000ddel\u007f`},
		{"c1 \u009b2J", `c1 \u009b2J`},
		{"not utf-8 \xff\x9b", `not utf-8 \xff\x9b`},
		{"été ✓ 世界", "été ✓ 世界"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWriterSplitRunes: a rune cut between two writes is written whole,
// escaped or not, as one write of the whole would.
func TestWriterSplitRunes(t *testing.T) {
	in := []byte("a é \u009b ✓ \x1b[0m \xff z")
	for cut := range len(in) + 1 {
		var b bytes.Buffer
		w := NewWriter(&b)
		if _, err := w.Write(in[:cut]); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(in[cut:]); err != nil {
			t.Fatal(err)
		}
		if want := String(string(in)); b.String() != want {
			t.Errorf("cut at %d: %q, want %q", cut, b.String(), want)
		}
	}
}

// TestJSONStaysJSON: JSON written through the writer decodes to the same
// strings (its escapes are JSON's).
func TestJSONStaysJSON(t *testing.T) {
	in := map[string]string{"m": "del\x7f c1\u0085 esc\x1b ok"}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := NewWriter(&b).Write(raw); err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(b.Bytes(), &out); err != nil || out["m"] != in["m"] {
		t.Errorf("through the writer: %s → %q %v, want %q", b.String(), out["m"], err, in["m"])
	}
	for _, c := range b.Bytes() {
		if c < 0x20 || c == 0x7f {
			t.Errorf("raw control byte %#x in %q", c, b.String())
		}
	}
}

// TestFlushWritesACutRune: bytes of a rune whose end never comes are
// written escaped at Flush, not dropped.
func TestFlushWritesACutRune(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	if _, err := w.Write([]byte("end \xe2\x9c")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.String() != `end \xe2\x9c` {
		t.Errorf("flushed %q", b.String())
	}
}
