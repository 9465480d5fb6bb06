package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
	"watchdog/store"
	"watchdog/store/internal/writewatch"
)

// told waits for the store's health signal, with a ceiling that is not a
// budget: inotify tells in microseconds.
func told(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("%s: HealthEvents told nothing", what)
	}
}

// drain empties the signal's one slot.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestHealthEventsTellTheFilesNames: the store's health signal wakes its
// reader when the database file, its WAL or its -shm is deleted, replaced
// and stays silent for commits (a write needs no
// check of its own beyond writeTx's) and for other files of the
// directory. The daemon's store watch checks the identity on it, instead
// of a stat a second.
func TestHealthEventsTellTheFilesNames(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, path string)
	}{
		{"rm the WAL", func(t *testing.T, path string) {
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
			}
		}},
		{"rm the -shm", func(t *testing.T, path string) {
			if err := os.Remove(path + "-shm"); err != nil {
				t.Fatal(err)
			}
		}},
		{"database replaced by a rename", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other")
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, path := openTest(t)
			ch := s.HealthEvents()
			if s.identity.stop == nil {
				t.Skip("no inotify on this system: the daemon checks on its tick")
			}
			drain(ch)
			// Quiet: commits and another file of the directory tell nothing.
			for i := range 20 {
				if err := register(ctx, s, "quiet-"+string(rune('a'+i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(filepath.Dir(path), "neighbour"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			// A weak check (events are read asynchronously, so a late one
			// could slip past it, never a false failure): nothing told so
			// far.
			select {
			case <-ch:
				t.Fatal("told of commits or of another file")
			default:
			}
			tt.do(t, path)
			told(t, ch, tt.name)
		})
	}
}

// TestWriteHealthFollowsTheWrites: a commit is recorded (LastOK) and clears
// a failure; a caller's own error (an unknown entity) changes nothing; a
// write the store refuses (its file lost) is the failure, told once on
// HealthEvents; a write running is Stalled from its start.
func TestWriteHealthFollowsTheWrites(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	ch := s.HealthEvents()
	if h := s.WriteHealth(); h.Failed != nil || !h.Stalled.IsZero() {
		t.Fatalf("a fresh store: %+v", h)
	}
	before := time.Now()
	if err := register(ctx, s, "one"); err != nil {
		t.Fatal(err)
	}
	ok := s.WriteHealth()
	if ok.LastOK.Before(before) || ok.Failed != nil || !ok.Stalled.IsZero() {
		t.Fatalf("after a commit: %+v", ok)
	}

	// The caller's error: not the store's.
	_, _, err := s.ApplyTransition(ctx, "session", "nobody", func(store.Entity) (store.Change, error) {
		return store.Change{}, errors.New("never decided")
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("transition of an unknown entity: %v", err)
	}
	if h := s.WriteHealth(); h.Failed != nil || !h.LastOK.Equal(ok.LastOK) {
		t.Errorf("after a caller's error: %+v, want as before (%+v)", h, ok)
	}

	// The store's failure: the database file deleted.
	drain(ch)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := register(ctx, s, "two"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write after the loss: %v", err)
	}
	if h := s.WriteHealth(); !errors.Is(h.Failed, store.ErrUnavailable) {
		t.Errorf("after a refused write: Failed %v, want store.ErrUnavailable", h.Failed)
	}
	told(t, ch, "a refused write")
	if err := s.Check(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Check after the loss: %v", err)
	}

	// A write running: stalled since it started, until it ends.
	var w writewatch.Watch
	w.Start()
	if h := w.WriteHealth(); h.Stalled.IsZero() {
		t.Errorf("a write running: not stalled")
	}
	w.Done(nil)
	if h := w.WriteHealth(); !h.Stalled.IsZero() || h.LastOK.IsZero() {
		t.Errorf("after it: %+v", h)
	}
}

// TestCheckWritesNothing: Check on a healthy store passes and writes
// nothing (the WAL does not grow, no commit is recorded), where CheckWrite
// writes its row.
func TestCheckWritesNothing(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	if err := s.CheckWrite(ctx); err != nil {
		t.Fatal(err)
	}
	stamp := func() string {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime().String() + " " + string(rune(fi.Size()))
	}
	last, wal := s.WriteHealth().LastOK, stamp()
	for range 10 {
		if err := s.Check(ctx); err != nil {
			t.Fatalf("Check of a healthy store: %v", err)
		}
	}
	if got := s.WriteHealth().LastOK; !got.Equal(last) {
		t.Errorf("Check recorded a write")
	}
	if got := stamp(); got != wal {
		t.Errorf("Check wrote the WAL: %s, was %s", got, wal)
	}
	if err := s.CheckWrite(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.WriteHealth().LastOK; !got.After(last) {
		t.Errorf("CheckWrite recorded no write")
	}
}

// TestMountStateOfAWritableFile: a file on a file system mounted
// read-write reads "" (the read-only case is TestServeReadOnlyFileSystem's,
// which needs root to mount), and so does a path that does not exist.
func TestMountStateOfAWritableFile(t *testing.T) {
	_, path := openTest(t)
	for _, p := range []string{path, filepath.Join(t.TempDir(), "none")} {
		if got := mountState(p); got != "" {
			t.Errorf("mountState(%s) = %q, want \"\"", p, got)
		}
	}
}
