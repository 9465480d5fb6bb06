package probe

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/state"
)

// TestArtifactChecksCloseOnlyTheirOwn: a check that ends before it opens
// its root (a contract over a limit, no root, a context already done, an
// absolute path) closes no descriptor it did not open. It once closed fd
// 0 on every such check: the daemon's stdin first, then whatever took the
// number next (its listening socket, seen as "accept4: socket operation
// on non-socket").
func TestArtifactChecksCloseOnlyTheirOwn(t *testing.T) {
	// fd 0 is what the bug closed: keep a copy and put it back, so a
	// failure here cannot break the rest of the test binary.
	saved, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Dup2(saved, 0); _ = unix.Close(saved) }()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		root  string
		specs []state.ArtifactSpec
	}{
		{"too many components", context.Background(), t.TempDir(), []state.ArtifactSpec{{Path: strings.Repeat("*/", 30) + "x", Required: true}}},
		{"no root", context.Background(), "", []state.ArtifactSpec{{Path: "review.md", Required: true}}},
		{"context done", done, t.TempDir(), []state.ArtifactSpec{{Path: "review.md", Required: true}}},
		{"absolute path", context.Background(), t.TempDir(), []state.ArtifactSpec{{Path: "/abs", Required: true}}},
		{"a check that opens its root", context.Background(), t.TempDir(), []state.ArtifactSpec{{Path: "review.md", Required: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			CheckArtifacts(tc.ctx, tc.root, tc.specs, time.Time{})
			var st unix.Stat_t
			if err := unix.Fstat(0, &st); err != nil {
				_ = unix.Dup2(saved, 0)
				t.Fatalf("fd 0 was closed by the check: %v", err)
			}
		})
	}
}
