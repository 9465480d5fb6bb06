package sqlite

import (
	"path/filepath"
	"testing"
)

// TestReadDaemonLocks: the lock table tells which hosts' daemons serve a
// file, and whether one has company (ADR-0041), from the locks held now
// and not from the lock files left behind by daemons gone.
func TestReadDaemonLocks(t *testing.T) {
	cases := []struct {
		name      string
		hold      []string // host ids whose lock is held
		left      []string // host ids whose lock file exists, released
		self      string
		wantHolds []string
		wantOther bool
	}{
		{name: "no daemon ever", self: "a"},
		{name: "alone", hold: []string{"a"}, self: "a", wantHolds: []string{"a"}},
		{name: "alone, another's file left", hold: []string{"a"}, left: []string{"b"}, self: "a", wantHolds: []string{"a"}},
		{name: "two hosts", hold: []string{"a", "b"}, self: "a", wantHolds: []string{"a", "b"}, wantOther: true},
		{name: "the plain lock beside", hold: []string{"a", ""}, self: "a", wantHolds: []string{"a", ""}, wantOther: true},
		{name: "a host id that is hashed", hold: []string{"a", "host/with slash"}, self: "a", wantHolds: []string{"a", "host/with slash"}, wantOther: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "w.db")
			for _, h := range c.left {
				l, err := LockDaemonHost(db, h)
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Release(); err != nil {
					t.Fatal(err)
				}
			}
			for _, h := range c.hold {
				l, err := LockDaemonHost(db, h)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Release() }) //nolint:errcheck // the test's end
			}
			got, err := ReadDaemonLocks(db)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range c.wantHolds {
				if !got.Holds(h) {
					t.Errorf("Holds(%q) = false, want true", h)
				}
			}
			for _, h := range c.left {
				if got.Holds(h) {
					t.Errorf("Holds(%q) = true for a released lock", h)
				}
			}
			if o := got.Others(c.self); o != c.wantOther {
				t.Errorf("Others(%q) = %v, want %v", c.self, o, c.wantOther)
			}
		})
	}
	if _, err := ReadDaemonLocks(":memory:"); err == nil {
		t.Error("an in-memory database: no error")
	}
}
