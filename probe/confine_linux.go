//go:build linux

package probe

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resolveBeneath: never above the root, and no /proc magic links.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

var (
	beneathOnce sync.Once
	beneathOK   bool
)

// beneathSupported reports whether the kernel has openat2 (Linux 5.6) and
// lets this process use it (a seccomp filter may answer ENOSYS).
func beneathSupported() bool {
	beneathOnce.Do(func() {
		fd, err := unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveBeneath})
		if err == nil {
			unix.Close(fd)
			beneathOK = true
		}
	})
	return beneathOK
}

// openBeneathRoot opens the root as an O_PATH directory descriptor, the
// path built in the scratch buffer.
func openBeneathRoot(root string, sc *scratch) (int, error) {
	p := append(sc.path[:0], root...)
	if bytes.IndexByte(p, 0) >= 0 {
		return -1, unix.EINVAL
	}
	p = append(p, 0)
	sc.path = p
	return openat(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
}

func closeFD(fd int) { _ = unix.Close(fd) }

// fstatatFD stats name in directory fd without following a final symlink,
// allocating nothing.
func fstatatFD(fd int, name string, sc *scratch, st *unix.Stat_t) error {
	p := append(sc.path[:0], name...)
	if bytes.IndexByte(p, 0) >= 0 {
		return unix.EINVAL
	}
	p = append(p, 0)
	sc.path = p
	for {
		_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(fd),
			uintptr(unsafe.Pointer(&p[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}

// openat2 opens path below dirfd with RESOLVE_BENEATH, retrying EINTR and
// EAGAIN (a concurrent rename); an escape reads errEscapes.
func openat2(dirfd int, path string, flags uint64) (int, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return -1, unix.EINVAL
	}
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolveBeneath}
	for range 64 {
		fd, err := unix.Openat2(dirfd, path, &how)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR, unix.EAGAIN:
			continue
		case unix.EXDEV:
			return -1, errEscapes
		}
		return -1, err
	}
	return -1, unix.EAGAIN
}

func fromStat(st *unix.Stat_t, e *fileEntry) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.kind = kindRegular
	case unix.S_IFDIR:
		e.kind = kindDir
	case unix.S_IFLNK:
		e.kind = kindSymlink
	default:
		e.kind = kindOther
	}
	e.size = st.Size
	e.mtime = time.Unix(st.Mtim.Unix())
	e.dev, e.ino = st.Dev, st.Ino
}

func (r *rootFS) lstatBeneath(rel string, e *fileEntry) error {
	var st unix.Stat_t
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		// One component below the root's own descriptor: nothing to
		// resolve, nothing to escape through.
		if err := fstatatFD(r.fd, rel, r.sc, &st); err != nil {
			return err
		}
		fromStat(&st, e)
		return nil
	}
	dfd, err := openat2(r.fd, rel[:i], unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer closeFD(dfd)
	if err := fstatatFD(dfd, rel[i+1:], r.sc, &st); err != nil {
		return err
	}
	fromStat(&st, e)
	return nil
}

func (r *rootFS) statBeneath(rel string, e *fileEntry) error {
	fd, err := openat2(r.fd, rel, unix.O_PATH)
	if err != nil {
		return err
	}
	defer closeFD(fd)
	var st unix.Stat_t
	for {
		err = unix.Fstat(fd, &st)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return err
	}
	fromStat(&st, e)
	return nil
}

func (r *rootFS) openReadBeneath(rel string) (*os.File, error) {
	fd, err := openat2(r.fd, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

func (r *rootFS) openDirBeneath(rel string) (dirHandle, error) {
	fd, err := openat2(r.fd, rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return dirHandle{fd: -1}, err
	}
	return dirHandle{fd: fd}, nil
}

func (d *dirHandle) namesBeneath(fn func(name string) bool) error {
	buf := make([]byte, 8192)
	var names []string
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		for _, name := range names {
			if !fn(name) {
				return nil
			}
		}
	}
}

func (d *dirHandle) lstatBeneath(name string, e *fileEntry) error {
	var st unix.Stat_t
	sc := getScratch()
	defer putScratch(sc)
	if err := fstatatFD(d.fd, name, sc, &st); err != nil {
		return err
	}
	fromStat(&st, e)
	return nil
}
