// Package testenv is the one test harness the packages' tests share: real
// file-system fixtures (issue 11's poisoned artifacts roots), a settable
// clock, real processes (a sleep, a dead pid, a zombie), polling for what
// a real process or the real binary does in its own time, the watchdog
// binary built once, and raw SQL beside a store. It is imported by tests
// only.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SelfLinks puts two symlinks to dir itself in dir ("a" and "b"): every
// "*" component of a glob then matches dir twice over, the walk issue 11
// found that never ended.
func SelfLinks(t testing.TB, dir string) {
	t.Helper()
	for _, name := range []string{"a", "b"} {
		if err := os.Symlink(".", filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// BigDir makes dir/big holding n empty files, f00000 on, for globs to
// list.
func BigDir(t testing.TB, dir string, n int) {
	t.Helper()
	big := filepath.Join(dir, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// AgedFile writes dir/name (its directories made) with body and sets its
// modification time age ago: a heartbeat file last touched then. It
// returns the file's path.
func AgedFile(t testing.TB, dir, name, body string, age time.Duration) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Now().Add(-age)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	return p
}
