package monitor

import (
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// MaxFileDirs bounds the directories watched for heartbeat files: one
// inotify watch each. A file in a directory beyond it is polled (stat'ed
// at its deadlines and by the sweep), as every file is where inotify is
// unavailable.
const MaxFileDirs = 4096

// files watches the directories of open local entities' heartbeat files,
// so a touch is judged when it happens, not at the next sweep. A
// directory, not the file: the file may not exist yet, or be replaced by
// a rename.
type files struct {
	w      *fsnotify.Watcher // nil: every file polled
	max    int
	dirs   map[string]int                   // watched directory → files in it
	paths  map[string]map[*tracked]struct{} // a watched file → its entities
	polled int
}

func newFiles(max int) *files {
	f := &files{max: max, dirs: map[string]int{}, paths: map[string]map[*tracked]struct{}{}}
	if w, err := fsnotify.NewWatcher(); err == nil {
		f.w = w
	}
	return f
}

// events is the watcher's channel of changes (nil without a watcher:
// never ready in a select).
func (f *files) events() chan fsnotify.Event {
	if f.w == nil {
		return nil
	}
	return f.w.Events
}

// add watches path for tr; false: polled (no watcher, the cap, or a
// directory inotify refuses).
func (f *files) add(tr *tracked, path string) bool {
	path = filepath.Clean(path)
	if set := f.paths[path]; set != nil {
		set[tr] = struct{}{}
		return true
	}
	dir := filepath.Dir(path)
	if f.dirs[dir] == 0 {
		if f.w == nil || len(f.dirs) >= f.max || f.w.Add(dir) != nil {
			f.polled++
			return false
		}
	}
	f.dirs[dir]++
	f.paths[path] = map[*tracked]struct{}{tr: {}}
	return true
}

// remove stops watching path for tr (watched says add said true).
func (f *files) remove(tr *tracked, path string, watched bool) {
	if !watched {
		f.polled--
		return
	}
	path = filepath.Clean(path)
	set := f.paths[path]
	if set == nil {
		return
	}
	delete(set, tr)
	if len(set) > 0 {
		return
	}
	delete(f.paths, path)
	dir := filepath.Dir(path)
	if f.dirs[dir]--; f.dirs[dir] <= 0 {
		delete(f.dirs, dir)
		_ = f.w.Remove(dir) // gone with its directory already, at worst
	}
}

// touched are the entities whose heartbeat file name is.
func (f *files) touched(name string) map[*tracked]struct{} {
	return f.paths[filepath.Clean(name)]
}

func (f *files) close() {
	if f.w != nil {
		_ = f.w.Close()
	}
}
