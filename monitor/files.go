package monitor

import (
	"context"
	"path/filepath"

	"watchdog/state"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
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
	// blind are watched directories whose events do not tell every change
	// of their files' paths: reached through a symlink, or gone (removed or
	// moved: fsnotify dropped the watch). The sweep reads their files.
	blind map[string]bool
}

func newFiles(max int) *files {
	f := &files{max: max, dirs: map[string]int{}, paths: map[string]map[*tracked]struct{}{}, blind: map[string]bool{}}
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
		if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
			f.blind[dir] = true // a symlink retargeted would be told by no event
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
		delete(f.blind, dir)
		_ = f.w.Remove(dir) // gone with its directory already, at worst
	}
}

// vouches says whether every change of path is told by an event: its
// directory watched by inotify, and not blind.
func (f *files) vouches(path string) bool {
	dir := filepath.Dir(filepath.Clean(path))
	return f.w != nil && f.dirs[dir] > 0 && !f.blind[dir]
}

func (f *files) touched(name string) map[*tracked]struct{} {
	return f.paths[filepath.Clean(name)]
}

func (f *files) close() {
	if f.w != nil {
		_ = f.w.Close()
	}
}

// fileEvent: an event on a watched directory itself (its mode changed, or
// it was removed or moved, taking its watch along) is one on each of its files.
func (m *Monitor) fileEvent(ctx context.Context, ev fsnotify.Event) {
	dir := filepath.Clean(ev.Name)
	if m.fw.dirs[dir] == 0 {
		m.fileChanged(ctx, ev.Name)
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		m.fw.blind[dir] = true
	}
	for path := range m.fw.paths {
		if filepath.Dir(path) == dir {
			m.fileChanged(ctx, path)
		}
	}
}

// fileEventsLost: events were lost (a full inotify queue), so every
// watched file is read again (fileChanged), an idle or stalled entity's now.
func (m *Monitor) fileEventsLost(ctx context.Context, err error) {
	m.opt.Logger.Warn("heartbeat file events were lost; looking at every watched file", zap.Error(err))
	for path := range m.fw.paths {
		m.fileChanged(ctx, path)
	}
}

// fileChanged makes the sweep read name again for each entity whose
// heartbeat file it is, and rejudges the idle or stalled ones; the others
// wait for their deadline.
func (m *Monitor) fileChanged(ctx context.Context, name string) {
	for tr := range m.fw.touched(name) {
		if m.fw.vouches(name) {
			m.known.changed(tr.key())
		} else {
			m.known.drop(tr.key())
		}
		tr.w().fileToldAt = stampOf(m.opt.Now())
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
	if watched && m.fw.vouches(want) {
		m.known.watch(tr.key(), want) // after the watch: no change goes untold
	}
	m.countFiles()
}

func (m *Monitor) unwatchFile(tr *tracked) {
	if r := tr.r(); r.hbWatch != "" {
		m.known.drop(tr.key())
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
