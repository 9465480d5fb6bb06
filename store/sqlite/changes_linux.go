package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// changeMask is what Changes hears: a commit writes the WAL (or the
// database), and a checkpoint, a new WAL or a replaced file is a change too.
const changeMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE

// identityMask is what can change the identity of the store's files
// (SQLite.HealthEvents): a name created, moved or removed. Never a write,
// so a commit costs the identity watch nothing; not IN_ATTRIB either,
// which SQLite's commits raise on the WAL (a chmod is seen by the store
// watch's faccessat each second). The directory's own removal or move
// (IN_DELETE_SELF, IN_MOVE_SELF) and the watch's end (IN_IGNORED, an
// unmount) are told too.
const identityMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// watchFile calls changed whenever one of the files of the directory of
// file named by suffixes (file itself for "", its SQLite WAL for "-wal")
// has an event of mask, until stop is called. It watches the directory,
// not the files: the WAL comes and goes with checkpoints and the last
// connection's close, and a database replaced by a rename is a new inode.
// Events for other files of the directory are read and dropped; events of
// the directory itself (no name: its removal, the watch's end) and a
// queue overflow are told. The inotify descriptor is non-blocking and
// read through Go's poller, so stop's Close ends a pending read at once.
func watchFile(file string, suffixes []string, mask uint32, changed func()) (stop func(), err error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	dir, base := filepath.Split(filepath.Clean(file))
	if dir == "" {
		dir = "."
	}
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), "inotify:"+dir)
	names := map[string]bool{}
	for _, suffix := range suffixes {
		names[base+suffix] = true
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				if errors.Is(err, os.ErrClosed) {
					return
				}
				// An unexpected error: tell the reader once (it re-reads
				// the feed) and stop; it falls back to its slow tick.
				changed()
				return
			}
			hit := false
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				for i, c := range name {
					if c == 0 {
						name = name[:i]
						break
					}
				}
				if ev.Mask&unix.IN_Q_OVERFLOW != 0 || ev.Len == 0 || names[string(name)] {
					hit = true
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
			if hit {
				changed()
			}
		}
	})
	return func() {
		f.Close()
		wg.Wait()
	}, nil
}
