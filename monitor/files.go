package monitor

import (
	"context"
	"path/filepath"

	"watchdog/state"

	"github.com/fsnotify/fsnotify"
)

// MaxFileDirs bounds the directories watched for heartbeat files (one
// inotify watch each); a file beyond it is polled.
const MaxFileDirs = 4096

// files watches the heartbeat files' directories, so a touch is judged
// when it happens. A directory, not the file: the file may not exist yet,
// or be replaced by a rename.
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

// add watches path for tr; false: polled.
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

func (f *files) touched(name string) map[*tracked]struct{} {
	return f.paths[filepath.Clean(name)]
}

func (f *files) close() {
	if f.w != nil {
		_ = f.w.Close()
	}
}

// fileChanged rejudges the idle or stalled entities whose heartbeat file
// name is; the others wait for their deadline.
func (m *Monitor) fileChanged(ctx context.Context, name string) {
	for tr := range m.fw.touched(name) {
		if h := tr.f.healthOf(); h != state.HealthIdle && h != state.HealthStalled {
			continue
		}
		e := tr.entity(m.opt.HostID)
		if m.freshFile(tr, &e) {
			m.check(ctx, tr)
			m.reschedule(tr)
		}
	}
}

// watchFile keeps tr's heartbeat file watched while it is open and local.
func (m *Monitor) watchFile(tr *tracked) {
	want := tr.r().heartbeatFile
	if want == tr.r().hbWatch {
		return
	}
	m.unwatchFile(tr)
	if want == "" {
		return
	}
	if m.fw == nil {
		m.fw = newFiles(MaxFileDirs)
	}
	watched := m.fw.add(tr, want)
	r := tr.w()
	r.hbWatch, r.hbWatched = want, watched
	m.countFiles()
}

func (m *Monitor) unwatchFile(tr *tracked) {
	if r := tr.r(); r.hbWatch != "" {
		m.fw.remove(tr, r.hbWatch, r.hbWatched)
		tr.rare.hbWatch, tr.rare.hbWatched = "", false
		m.countFiles()
	}
}

func (m *Monitor) countFiles() {
	m.nFiles.Store(int64(len(m.fw.paths)))
	m.nFilesPolled.Store(int64(m.fw.polled))
}

// HeartbeatFiles counts the heartbeat files of open local entities watched
// by inotify, and those polled for want of a watch.
func (m *Monitor) HeartbeatFiles() (watched, polled int) {
	return int(m.nFiles.Load()), int(m.nFilesPolled.Load())
}
