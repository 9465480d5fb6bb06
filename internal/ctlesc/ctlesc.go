// Package ctlesc shows control characters as text (\u001b for ESC), so what a
// client or process wrote cannot act on the terminal or page showing it
// (docs/security.md). Tab and newline are kept.
package ctlesc

import (
	"io"
	"strconv"
	"unicode/utf8"
)

// control says whether r acts on a terminal: C0 but tab and newline, DEL, C1.
func control(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f
}

// appendEscaped appends p to dst, controls as \u00XX (the same in a JSON string)
// and invalid UTF-8 as \xNN. If partial, a rune cut at p's end is left out and
// its length returned.
func appendEscaped(dst, p []byte, partial bool) ([]byte, int) {
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' {
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && n <= 1 && partial && !utf8.FullRune(p[i:]):
			return dst, len(p) - i
		case r == utf8.RuneError && n <= 1:
			dst = append(dst, `\x`...)
			dst = append(dst, hex2(c)...)
		case control(r):
			dst = append(dst, `\u00`...)
			dst = append(dst, hex2(byte(r))...)
		default:
			dst = append(dst, p[i:i+n]...)
		}
		i += max(n, 1)
	}
	return dst, 0
}

func hex2(b byte) string {
	s := strconv.FormatUint(uint64(b), 16)
	if len(s) == 1 {
		s = "0" + s
	}
	return s
}

// String is s with its control characters escaped.
func String(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' || c >= 0x7f {
			b, _ := appendEscaped(make([]byte, 0, len(s)+8), []byte(s), false)
			return string(b)
		}
	}
	return s
}

// Writer escapes what is written through it (String), holding a rune cut
// between two writes until its end comes.
type Writer struct {
	w    io.Writer
	pend []byte
	buf  []byte
}

// NewWriter escapes what it writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p escaped; it reports all of p written unless w failed.
func (e *Writer) Write(p []byte) (int, error) {
	in := p
	if len(e.pend) > 0 {
		in = append(e.pend, p...)
	}
	var rest int
	e.buf, rest = appendEscaped(e.buf[:0], in, true)
	e.pend = append(e.pend[:0], in[len(in)-rest:]...)
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a rune still cut short as \xNN bytes: no more are coming.
func (e *Writer) Flush() error {
	if len(e.pend) == 0 {
		return nil
	}
	e.buf, _ = appendEscaped(e.buf[:0], e.pend, false)
	e.pend = e.pend[:0]
	_, err := e.w.Write(e.buf)
	return err
}

// WriteRaw writes s unescaped, for the caller's own control sequences.
func (e *Writer) WriteRaw(s string) error {
	_, err := io.WriteString(e.w, s)
	return err
}

// Unwrap is the writer escaped to (whether it is a terminal).
func (e *Writer) Unwrap() io.Writer { return e.w }
