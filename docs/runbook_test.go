package docs

import (
	"strings"
	"testing"

	"watchdog/state"
)

// TestRunbookCoversEveryReason holds the runbook and the reason registry
// together: every registered code has exactly one section, with a
// one-line Do, and every anchor names a registered code.
func TestRunbookCoversEveryReason(t *testing.T) {
	if len(Sections()) == 0 {
		t.Fatal("no reason-code sections parsed from runbook.md")
	}
	seen := map[string]string{}
	for _, s := range Sections() {
		if s.Do == "" || strings.Contains(s.Do, "\n") || !strings.HasSuffix(s.Do, ".") {
			t.Errorf("section %q: Do %q, want one sentence on the **Do.** line", s.Title, s.Do)
		}
		if len(s.Codes) == 0 {
			t.Errorf("section %q covers no code", s.Title)
		}
		if s.Text == "" {
			t.Errorf("section %q says nothing beside its Do", s.Title)
		}
		for _, c := range s.Codes {
			if prev, dup := seen[c]; dup {
				t.Errorf("%s in both %q and %q", c, prev, s.Title)
			}
			seen[c] = s.Title
			if !state.Registered(state.ReasonCode(c)) {
				t.Errorf("section %q: %s is not a registered reason code", s.Title, c)
			}
		}
	}
	for _, r := range state.Reasons() {
		s, ok := ForCode(string(r.Code))
		if !ok {
			t.Errorf("%s has no runbook section (add its <a id> anchor to a section of %q in runbook.md)", r.Code, reasonPart)
			continue
		}
		if s.Do == "" {
			t.Errorf("%s: section %q has no Do", r.Code, s.Title)
		}
	}
}

func TestLink(t *testing.T) {
	for _, c := range []struct{ base, want string }{
		{"", "/runbook#run.health.stalled"},
		{"https://wiki.example/watchdog", "https://wiki.example/watchdog#run.health.stalled"},
		{"https://wiki.example/watchdog#", "https://wiki.example/watchdog#run.health.stalled"},
	} {
		if got := Link(c.base, "run.health.stalled"); got != c.want {
			t.Errorf("Link(%q) = %q, want %q", c.base, got, c.want)
		}
	}
}

// TestFor: a code with a section gets its Do line and Link's link; one
// without gets neither.
func TestFor(t *testing.T) {
	sec, ok := ForCode("run.health.stalled")
	if !ok {
		t.Fatal("run.health.stalled has no section")
	}
	for _, c := range []struct {
		name, base, code string
		want             Todo
		ok               bool
	}{
		{"local", "", "run.health.stalled", Todo{Do: sec.Do, Link: "/runbook#run.health.stalled"}, true},
		{"published", "https://wiki.example/watchdog", "run.health.stalled", Todo{Do: sec.Do, Link: "https://wiki.example/watchdog#run.health.stalled"}, true},
		// Failure case: no section, no link to a missing anchor.
		{"no section", "https://wiki.example/watchdog", "no.such.code", Todo{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := For(c.base, c.code)
			if got != c.want || ok != c.ok {
				t.Errorf("For(%q, %q) = %+v, %v; want %+v, %v", c.base, c.code, got, ok, c.want, c.ok)
			}
		})
	}
}
