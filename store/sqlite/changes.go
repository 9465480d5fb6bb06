package sqlite

import "sync"

// changes is the store's change signal: one buffered slot, so a burst of
// commits wakes a reader once, and a reader that is busy when a commit
// lands is woken again after.
type changes struct {
	once sync.Once
	ch   chan struct{}
	// stop ends the watcher (nil when none runs).
	stop func()
}

// Changes returns a channel told whenever the database may have changed, by
// any process (inotify on the file and its WAL); several commits may be told
// once. nil when no event can be had: the reader polls.
func (s *Store) Changes() <-chan struct{} {
	s.changes.once.Do(func() {
		file := FilePath(s.path)
		if file == "" {
			return
		}
		ch := make(chan struct{}, 1)
		stop, err := watchFile(file, []string{"", "-wal"}, changeMask, func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		})
		if err != nil {
			return
		}
		s.changes.ch, s.changes.stop = ch, stop
	})
	if s.changes.ch == nil {
		return nil
	}
	return s.changes.ch
}

// closeChanges stops the change watcher, if one runs.
func (s *Store) closeChanges() {
	if s.changes.stop != nil {
		s.changes.stop()
	}
}
