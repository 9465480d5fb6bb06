//go:build !linux

package runner

import (
	"errors"
	"os"
	"time"

	"watchdog/proctree"
)

// becomeSubreaper: only Linux has child subreapers.
func becomeSubreaper() error { return errors.New("child subreapers are Linux's") }

// reapOrphans: without a subreaper no orphan comes to the runner.
func reapOrphans() {}

// endLeftovers signals nothing where the runner cannot own the tree: the
// leftovers are reported as left running.
func endLeftovers(procs []proctree.Proc, _ time.Duration) []leftover {
	out := make([]leftover, len(procs))
	for i, p := range procs {
		out[i].proc = p
	}
	return out
}

// keepsTerminal: elsewhere every stream is left to the child as it is.
func keepsTerminal(*os.File) bool { return true }
