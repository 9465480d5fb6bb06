package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// LockFile is a declared lock file found still in place.
type LockFile struct {
	Path    string
	ModTime time.Time
}

// LockObservation lists which of an entity's declared lock files exist.
type LockObservation struct {
	// Present are the declared lock files that still exist.
	Present []LockFile
	// Errors are the lock files that could not be checked (for instance
	// permission denied): neither present nor absent.
	Errors []error
}

// CheckLocks reports which of the declared lock files still exist, each by
// its literal name (never a pattern), with lstat. Nothing is ever deleted:
// that is the operator's decision.
func CheckLocks(root string, files []string) LockObservation {
	var o LockObservation
	for _, f := range files {
		p := f
		if !filepath.IsAbs(p) {
			if root == "" {
				o.Errors = append(o.Errors, &fs.PathError{Op: "lock", Path: f, Err: errors.New("relative path and no artifacts root")})
				continue
			}
			p = filepath.Join(root, p)
		}
		var st unix.Stat_t
		err := lstatNoEINTR(p, &st)
		switch {
		case err == nil:
			o.Present = append(o.Present, LockFile{Path: p, ModTime: time.Unix(st.Mtim.Unix())})
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		default:
			o.Errors = append(o.Errors, &fs.PathError{Op: "lstat", Path: p, Err: err})
		}
	}
	return o
}

// Evidence describes one present lock file.
func (l LockFile) Evidence(checkedAt time.Time) state.EvidenceRef {
	return l.evidence(unixtime.Of(checkedAt))
}

func (l LockFile) evidence(fetchedAt unixtime.Time) state.EvidenceRef {
	detail := fmt.Sprintf("lock file %s still exists (modified %s); not removed", l.Path, l.ModTime.UTC().Format(time.RFC3339))
	return state.EvidenceRef{Kind: state.EvidenceFile, Path: l.Path, Detail: detail, FetchedAt: fetchedAt}
}

// lstatNoEINTR is unix.Lstat retried on EINTR.
func lstatNoEINTR(path string, st *unix.Stat_t) error {
	for {
		err := unix.Lstat(path, st)
		if err != unix.EINTR {
			return err
		}
	}
}
