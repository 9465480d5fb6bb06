package state

import (
	"errors"
	"strings"
	"testing"
)

// FuzzReasonCode: any string is either a well-formed code (three or more
// lowercase dot-separated segments under a known namespace) or refused
// with ErrMalformedCode, never a panic; CheckCode agrees with the registry.
func FuzzReasonCode(f *testing.F) {
	for _, seed := range []string{
		"run.failed.exit_nonzero", "system.health.process_dead_no_terminal", "session.health.x",
		"Run.Failed.X", "run..x", "run.failed.", ".run.failed", "widget.failed.x", "run.failed.x.y",
		"", "a.b", "run.failed.ü", strings.Repeat("a.", 200) + "a",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code string) {
		err := ValidateCode(code)
		if err != nil {
			if !errors.Is(err, ErrMalformedCode) {
				t.Fatalf("ValidateCode(%q) = %v, want ErrMalformedCode", code, err)
			}
		} else {
			segs := strings.Split(code, ".")
			if len(segs) < 3 || code != strings.ToLower(code) {
				t.Fatalf("ValidateCode accepted %q", code)
			}
			for _, s := range segs {
				if s == "" {
					t.Fatalf("ValidateCode accepted an empty segment in %q", code)
				}
			}
		}
		cerr := CheckCode(code)
		switch {
		case err != nil && cerr == nil:
			t.Fatalf("CheckCode accepted malformed %q", code)
		case err == nil && (cerr == nil) != Registered(ReasonCode(code)):
			t.Fatalf("CheckCode(%q) = %v but Registered = %t", code, cerr, Registered(ReasonCode(code)))
		}
		_ = Reserved(ReasonCode(code))
		_ = ForeignTo(ReasonCode(code), "session")
	})
}
