package runner

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"watchdog/proctree"
	"watchdog/state"
	"watchdog/wire"
)

// TestTailKeepsTheEnd writes streams in various chunkings into a small
// ring and checks it holds exactly their last bytes.
func TestTailKeepsTheEnd(t *testing.T) {
	const n = 8
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"nothing", nil, ""},
		{"short", []string{"abc"}, "abc"},
		{"exactly full", []string{"abcdefgh"}, "abcdefgh"},
		{"full in two", []string{"abcd", "efgh"}, "abcdefgh"},
		{"wraps", []string{"abcdef", "ghij"}, "cdefghij"},
		{"one big write", []string{"0123456789abcdef"}, "89abcdef"},
		{"many small", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}, "defghijk"},
		{"big after small", []string{"xy", "0123456789"}, "23456789"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTail(n)
			var total int64
			for _, w := range tc.writes {
				if k, err := tl.Write([]byte(w)); k != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, k, err)
				}
				total += int64(len(w))
			}
			if got := string(tl.bytes()); got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
			if tl.total != total {
				t.Errorf("total %d, want %d", tl.total, total)
			}
		})
	}
}

// TestTailTextIsValidUTF8: what is stored is valid UTF-8 of at most the
// ring's size, whatever the ring's start cut or the child printed.
func TestTailTextIsValidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a rune cut by the ring's start is dropped", "€é€ok", "é€ok"}, // 8 bytes kept: "\xac" then "é€ok": the stray byte goes
		{"ascii", "hello", "hello"},
		{"invalid bytes become U+FFFD", "a\xffb", "a\uFFFDb"},
		{"a run of invalid bytes is one U+FFFD", "\xff\xff\xff\xff\xff\xff\xff\xff", "\uFFFD"},
		{"replacements that grow are cut again at a rune boundary", "\xffa\xffa\xffa\xffa", "\uFFFDa\uFFFDa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTail(8)
			_, _ = tl.Write([]byte(tc.in))
			got := tl.text()
			if got != tc.want {
				t.Errorf("text %q, want %q", got, tc.want)
			}
			if !utf8.ValidString(got) || len(got) > 8 {
				t.Errorf("text %q: not valid UTF-8 or over 8 bytes", got)
			}
		})
	}
}

// TestTailEvidenceWithinLimits: a full 4 KiB tail of multibyte text
// becomes pieces the write path accepts (each within
// wire.MaxEvidenceField, valid UTF-8), in order, and together exactly the
// kept text; the ID says which stream and that it was cut.
func TestTailEvidenceWithinLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		out    string
		pieces int
		cut    bool
	}{
		{"one line", "db migration failed\n", 1, false},
		{"long lines", strings.Repeat("line of log output, é and 日本\n", 400), 3, true},
		{"no newline at all", strings.Repeat("日本語", 3000), 3, true},
		{"exactly one field", strings.Repeat("x", wire.MaxEvidenceField), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTail(TailBytes)
			_, _ = tl.Write([]byte(tc.out))
			ev := tl.evidence("stderr", time.Now())
			if len(ev) < 1 || len(ev) > tc.pieces {
				t.Fatalf("%d pieces, want 1 to %d", len(ev), tc.pieces)
			}
			var joined strings.Builder
			for _, e := range ev {
				if len(e.Detail) > wire.MaxEvidenceField || len(e.ID) > wire.MaxEvidenceField || !utf8.ValidString(e.Detail) {
					t.Errorf("piece %q: over the field limit or not UTF-8", e.ID)
				}
				if !strings.HasPrefix(e.ID, "stderr") || strings.Contains(e.ID, "last") != tc.cut {
					t.Errorf("id %q (cut: %v)", e.ID, tc.cut)
				}
				joined.WriteString(e.Detail)
			}
			if joined.String() != tl.text() || !strings.HasSuffix(tc.out, joined.String()) {
				t.Errorf("the pieces are not the tail of the output")
			}
			r := state.StateReason{Code: state.RunFailedExitNonzero, Message: "exit status 1", Evidence: ev}
			if err := wire.CheckReason(&r); err != nil {
				t.Errorf("the write path refuses it: %v", err)
			}
		})
	}
	if ev := (*tail)(nil).evidence("stdout", time.Now()); ev != nil {
		t.Errorf("a stream not kept gave %v", ev)
	}
	if ev := newTail(TailBytes).evidence("stdout", time.Now()); ev != nil {
		t.Errorf("a silent stream gave %v", ev)
	}
}

// TestOutcomeCarriesTailAndLeftovers: the end's reason holds the tail and
// names each leftover by the finding's ID, its message says what became
// of them, and, at the worst (a 4 KiB message of failing artifacts, both
// tails full, many leftovers), the write path still accepts it.
func TestOutcomeCarriesTailAndLeftovers(t *testing.T) {
	p, err := newPlan(Options{Type: "session", ID: "x"}, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	p.reg.PID = 4242
	errTail := newTail(TailBytes)
	_, _ = errTail.Write([]byte("starting\ndb migration failed\n"))
	sleep := proctree.Proc{PID: 4243, StartTicks: 99, Comm: "sleep"}
	for _, tc := range []struct {
		name     string
		left     []leftover
		kill     bool
		msg      string
		evDetail string
	}{
		{"none", nil, true, "exit status 1", ""},
		{"ended", []leftover{{proc: sleep, signal: syscall.SIGTERM, gone: true}}, true,
			"exit status 1; 1 leftover process ended by exec: sleep (SIGTERM)", "pid 4243 sleep, left by the command: ended by exec: SIGTERM"},
		{"killed", []leftover{{proc: sleep, signal: syscall.SIGKILL, gone: true, after: 10 * time.Second}}, true,
			"exit status 1; 1 leftover process ended by exec: sleep (SIGKILL)", "pid 4243 sleep, left by the command: ended by exec: SIGKILL after 10s"},
		{"left running", []leftover{{proc: sleep}}, false,
			"exit status 1; 1 leftover process still running: sleep", "pid 4243 sleep, left by the command: left running (--kill-leftovers=false)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := childEnd{code: 1, stderr: errTail, leftovers: tc.left, killLeftovers: tc.kill}
			got := p.outcome(p.graph.MapExit(1, 0, false, false), end, time.Now())
			if got.Reason.Message != tc.msg {
				t.Errorf("message %q, want %q", got.Reason.Message, tc.msg)
			}
			ev := got.Reason.Evidence
			if len(ev) < 2 || ev[1].ID != "stderr" || !strings.Contains(ev[1].Detail, "db migration failed") {
				t.Fatalf("the stderr tail is not the evidence after the pid: %+v", ev)
			}
			if tc.evDetail != "" && (len(ev) != 3 || ev[2].ID != "pid:4243:99" || ev[2].Detail != tc.evDetail) {
				t.Errorf("leftover evidence %+v, want pid:4243:99 %q", ev[2:], tc.evDetail)
			}
		})
	}

	// The worst case still fits.
	outTail := newTail(TailBytes)
	_, _ = outTail.Write(bytes.Repeat([]byte("é"), TailBytes))
	var many []leftover
	for i := range 40 {
		many = append(many, leftover{proc: proctree.Proc{PID: 5000 + i, StartTicks: 7, Comm: "chrome-renderer"}})
	}
	end := childEnd{code: 1, stderr: outTail, stdout: outTail, leftovers: many}
	got := p.outcome(p.graph.MapExit(1, 0, false, false), end, time.Now())
	r := state.StateReason{Code: state.ReasonCode(got.Reason.Code), Message: got.Reason.Message, Evidence: got.Reason.Evidence}
	if err := wire.CheckReason(&r); err != nil {
		t.Errorf("the write path refuses the worst case: %v", err)
	}
	if !strings.Contains(r.Message, "40 leftover processes still running: chrome-renderer ×40") {
		t.Errorf("message %q", r.Message)
	}
}
