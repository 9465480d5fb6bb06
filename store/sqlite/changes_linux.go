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

// identityMask is what can change the identity of the store's files: a name
// created, moved or removed. Never a write nor IN_ATTRIB, so commits cost nothing.
const identityMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// watchFile calls changed on events of mask for file's suffixes until stop.
// It watches the directory: the WAL comes and goes and a rename is a new inode.
// The fd is read through Go's poller, so stop's Close ends a pending read.
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
