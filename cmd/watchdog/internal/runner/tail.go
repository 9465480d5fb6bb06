package runner

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/wire"
)

// TailBytes is how much of the end of a kept stream the runner stores with
// the end: the last lines a failing job printed, which usually say why.
const TailBytes = 4096

// tail keeps the last len(buf) bytes written: a ring, bounded whatever the
// child prints. One goroutine writes it; it is read after that one ended.
type tail struct {
	buf   []byte
	next  int   // where the next byte goes
	full  bool  // the ring has wrapped: buf holds the last len(buf) bytes
	total int64 // every byte written, kept or not
}

func newTail(n int) *tail { return &tail{buf: make([]byte, n)} }

// Write implements io.Writer; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if len(p) >= len(t.buf) {
		copy(t.buf, p[len(p)-len(t.buf):])
		t.next, t.full = 0, true
		return n, nil
	}
	c := copy(t.buf[t.next:], p)
	if c < len(p) {
		copy(t.buf, p[c:])
		t.full = true
	}
	t.next = (t.next + len(p)) % len(t.buf)
	if t.next == 0 && len(p) > 0 {
		t.full = true
	}
	return n, nil
}

// bytes is what the ring holds, oldest first.
func (t *tail) bytes() []byte {
	if !t.full {
		return append([]byte(nil), t.buf[:t.next]...)
	}
	return append(append([]byte(nil), t.buf[t.next:]...), t.buf[:t.next]...)
}

// text is what the ring holds as valid UTF-8 of at most len(buf) bytes,
// starting at a rune boundary.
func (t *tail) text() string {
	b := t.bytes()
	if t.full {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if over := len(s) - len(t.buf); over > 0 {
		cut := over
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		s = s[cut:]
	}
	return s
}

// evidence is the kept tail of stream as evidence of the end, in pieces
// of at most wire.MaxEvidenceField bytes; nothing if empty or not kept.
func (t *tail) evidence(stream string, at time.Time) []state.EvidenceRef {
	if t == nil {
		return nil
	}
	s := t.text()
	if s == "" {
		return nil
	}
	pieces := splitText(s, wire.MaxEvidenceField)
	name := stream
	if t.total > int64(len(s)) {
		name = fmt.Sprintf("%s, last %d of %d bytes", stream, len(s), t.total)
	}
	out := make([]state.EvidenceRef, 0, len(pieces))
	for i, p := range pieces {
		id := name
		if len(pieces) > 1 {
			id = fmt.Sprintf("%s (%d/%d)", name, i+1, len(pieces))
		}
		out = append(out, state.EvidenceRef{Kind: state.EvidenceToolResult, ID: id, Detail: p, FetchedAt: unixtime.Of(at)})
	}
	return out
}

// splitText cuts s (valid UTF-8) into pieces of at most limit bytes, after
// a newline where one is near, else at a rune boundary.
func splitText(s string, limit int) []string {
	var out []string
	for len(s) > limit {
		cut := limit
		if nl := strings.LastIndexByte(s[:limit], '\n'); nl >= limit/2 {
			cut = nl + 1
		} else {
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}
