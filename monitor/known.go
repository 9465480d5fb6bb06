package monitor

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/store"
)

// fileTrust bounds how long a read of a watched heartbeat file stands with
// no event since: a change inotify cannot tell (an ancestor directory
// renamed or mounted over, rights taken away above it) is read within it.
const fileTrust = 5 * time.Minute

// knownFile is an entity's heartbeat file as last read for the sweep, while
// its directory is watched by inotify.
type knownFile struct {
	path string
	// gen is the mark of the last change told (an event, lost events): a
	// read made before it is not kept.
	gen uint64
	// read: mtime (zero: no such file) was read with owner's rights at at,
	// and no change was told since.
	read  bool
	owner probe.Owner
	mtime time.Time
	at    time.Time
}

// knownFiles are the watched files' reads by entity, shared by Run's
// goroutine (which tells changes) and the reaper's (which reads).
type knownFiles struct {
	mu  sync.Mutex
	m   map[key]knownFile
	gen uint64
}

// watch starts keeping k's file, nothing read yet.
func (kf *knownFiles) watch(k key, path string) {
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if kf.m == nil {
		kf.m = map[key]knownFile{}
	}
	kf.gen++
	kf.m[k] = knownFile{path: path, gen: kf.gen}
}

// changed forgets what was read of k's file: it must be read again.
func (kf *knownFiles) changed(k key) {
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if f, ok := kf.m[k]; ok {
		kf.gen++
		kf.m[k] = knownFile{path: f.path, gen: kf.gen}
	}
}

func (kf *knownFiles) drop(k key) {
	kf.mu.Lock()
	delete(kf.m, k)
	kf.mu.Unlock()
}

func (kf *knownFiles) get(k key) (knownFile, bool) {
	kf.mu.Lock()
	defer kf.mu.Unlock()
	f, ok := kf.m[k]
	return f, ok
}

// put keeps a read made after f was got, unless a change was told since.
func (kf *knownFiles) put(k key, f knownFile) {
	kf.mu.Lock()
	defer kf.mu.Unlock()
	if cur, ok := kf.m[k]; ok && cur.gen == f.gen && cur.path == f.path {
		kf.m[k] = f
	}
}

// HeartbeatFileAt is e's watched heartbeat file's mtime (zero: no such
// file) for the sweep, in place of the probe's stat (reaper.Reaper.WatchedFile);
// ok false: the probe looks. It is read again only once an event told a
// change, or after fileTrust: the daemon's watch says when, the read is e's
// owner's, as the probe's.
func (m *Monitor) HeartbeatFileAt(e *store.Entity) (mtime time.Time, ok bool) {
	if m.busySince.Load() != 0 {
		return time.Time{}, false // a step running may hold events not read yet
	}
	k := key{e.Type, e.ID}
	f, watched := m.known.get(k)
	if !watched || f.path != e.HeartbeatFile {
		return time.Time{}, false
	}
	now, owner := m.opt.Now(), judge.OwnerOf(e)
	if age := now.Sub(f.at); f.read && f.owner == owner && age >= 0 && age <= fileTrust {
		m.nStatsSkipped.Add(1)
		return f.mtime, true
	}
	mt, link, err := m.lstat(e)
	switch {
	case err == nil && !link && !mt.After(now):
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		mt = time.Time{} // missing, as the probe reads it
	default:
		// Unreadable, a symlink (its target's touch is told by no event
		// here), or from the future (its ctime decides): the probe looks.
		return time.Time{}, false
	}
	f.read, f.owner, f.mtime, f.at = true, owner, mt, now
	m.known.put(k, f)
	return mt, true
}

// lstatMtime is e's heartbeat file's mtime read with its owner's rights;
// link says it is a symlink, whose mtime is not the file's.
func lstatMtime(e *store.Entity) (mtime time.Time, link bool, err error) {
	fi, err := asOwner(e, os.Lstat)
	if err != nil {
		return time.Time{}, false, err
	}
	return fi.ModTime(), fi.Mode()&fs.ModeSymlink != 0, nil
}

// HeartbeatFileStatsSkipped counts the looks at a heartbeat file that made
// no stat: inotify told no change since the last read.
func (m *Monitor) HeartbeatFileStatsSkipped() uint64 { return m.nStatsSkipped.Load() }
