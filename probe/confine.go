package probe

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Confinement of artifact paths (ADR-0010): every lookup below a root goes
// through its handle (openat2 RESOLVE_BENEATH, else os.Root), so there is no
// window between check and use.

// errEscapes says a lookup would have left the artifacts root.
var errEscapes = errors.New("leads outside the artifacts root")

// Kinds of a looked-up file.
const (
	kindOther uint8 = iota
	kindRegular
	kindDir
	kindSymlink
)

// fileEntry is what a confined lookup found.
type fileEntry struct {
	kind     uint8
	size     int64
	mtime    time.Time
	dev, ino uint64
}

// rootFS is one artifacts root, opened for one check. Closing the zero value
// closes nothing: fd 0 there is not ours.
type rootFS struct {
	fd    int      // openat2 backend: an O_PATH descriptor of the root; -1 when r is used
	owned bool     // fd is a descriptor this rootFS opened and must close
	r     *os.Root // os.Root backend
	sc    *scratch
}

// openRootFS opens root (following symlinks in the root path itself: the
// root is what the entity declared).
func openRootFS(root string, sc *scratch) (rootFS, error) {
	if beneathSupported() && !forcePortableRoot {
		fd, err := openBeneathRoot(root, sc)
		if err != nil {
			return rootFS{fd: -1}, err
		}
		return rootFS{fd: fd, owned: true, sc: sc}, nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return rootFS{fd: -1}, unwrapErrno(err)
	}
	return rootFS{fd: -1, r: r, sc: sc}, nil
}

// forcePortableRoot makes tests run the os.Root backend on Linux too.
var forcePortableRoot bool

func (r *rootFS) close() {
	if r.r != nil {
		_ = r.r.Close()
		r.r = nil
	}
	if r.owned {
		closeFD(r.fd)
		r.fd, r.owned = -1, false
	}
}

// lstat looks up rel (clean, relative) without following a final symlink;
// symlinks before it are followed as long as they stay inside the root.
func (r *rootFS) lstat(rel string, e *fileEntry) error {
	if r.r == nil {
		return r.lstatBeneath(rel, e)
	}
	fi, err := r.r.Lstat(rel)
	if err != nil {
		return unwrapErrno(err)
	}
	fromFileInfo(fi, e)
	return nil
}

// stat looks up rel following every symlink, as long as each stays inside
// the root.
func (r *rootFS) stat(rel string, e *fileEntry) error {
	if r.r == nil {
		return r.statBeneath(rel, e)
	}
	fi, err := r.r.Stat(rel)
	if err != nil {
		return unwrapErrno(err)
	}
	fromFileInfo(fi, e)
	return nil
}

// openRead opens rel for reading, confined like stat, without blocking on a
// FIFO swapped in.
func (r *rootFS) openRead(rel string) (*os.File, error) {
	if r.r == nil {
		return r.openReadBeneath(rel)
	}
	f, err := r.r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, unwrapErrno(err)
	}
	return f, nil
}

// dirHandle is a directory below the root, open for listing and for
// looking up its entries by name.
type dirHandle struct {
	fd  int      // openat2 backend
	sub *os.Root // os.Root backend
	f   *os.File // os.Root backend: the directory, for listing
}

// openDir opens directory rel below the root, confined like stat.
func (r *rootFS) openDir(rel string) (dirHandle, error) {
	if r.r == nil {
		return r.openDirBeneath(rel)
	}
	sub, err := r.r.OpenRoot(rel)
	if err != nil {
		return dirHandle{fd: -1}, unwrapErrno(err)
	}
	f, err := sub.Open(".")
	if err != nil {
		_ = sub.Close()
		return dirHandle{fd: -1}, unwrapErrno(err)
	}
	return dirHandle{fd: -1, sub: sub, f: f}, nil
}

// names calls fn for each entry until it returns false, reading in small
// batches so a huge directory costs only what fn lets it.
func (d *dirHandle) names(fn func(name string) bool) error {
	if d.sub == nil {
		return d.namesBeneath(fn)
	}
	for {
		batch, err := d.f.Readdirnames(256)
		for _, n := range batch {
			if n == "." || n == ".." {
				continue
			}
			if !fn(n) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return unwrapErrno(err)
		}
	}
}

// lstat looks up one entry of the directory by name, without following
// it: a single component below a handle already held cannot leave it.
func (d *dirHandle) lstat(name string, e *fileEntry) error {
	if d.sub == nil {
		return d.lstatBeneath(name, e)
	}
	fi, err := d.sub.Lstat(name)
	if err != nil {
		return unwrapErrno(err)
	}
	fromFileInfo(fi, e)
	return nil
}

func (d *dirHandle) close() {
	if d.sub != nil {
		_ = d.f.Close()
		_ = d.sub.Close()
		d.sub = nil
	}
	if d.fd >= 0 {
		closeFD(d.fd)
		d.fd = -1
	}
}

// unwrapErrno reduces an error to its errno, so no message names a path
// (os.Root's would name a symlink's target).
func unwrapErrno(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	// os.Root's escape error is unexported; its text is its identity
	// (TestRootEscapeErrorRecognised keeps this honest across Go releases).
	if err != nil && err.Error() == "path escapes from parent" {
		return errEscapes
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case err != nil && err.Error() == "not a directory": // os.OpenRoot on a file
		return syscall.ENOTDIR
	}
	return errLookupFailed
}

// errLookupFailed stands for an os error that is neither an errno nor an
// escape; its own text may name a path, so it is not repeated.
var errLookupFailed = errors.New("lookup failed")

func fromFileInfo(fi fs.FileInfo, e *fileEntry) {
	switch m := fi.Mode(); {
	case m.IsRegular():
		e.kind = kindRegular
	case m.IsDir():
		e.kind = kindDir
	case m&fs.ModeSymlink != 0:
		e.kind = kindSymlink
	default:
		e.kind = kindOther
	}
	e.size, e.mtime = fi.Size(), fi.ModTime()
	e.dev, e.ino = 0, 0
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.dev, e.ino = uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // the types differ by platform
	}
}
