package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"watchdog/store"
)

func TestFilePath(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"./watchdog.db", "./watchdog.db"},
		{"/var/lib/watchdog/watchdog.db", "/var/lib/watchdog/watchdog.db"},
		{"file:/var/lib/w.db?_pragma=busy_timeout(1)", "/var/lib/w.db"},
		{"file:w.db", "w.db"},
		{"file:///srv/w.db", "/srv/w.db"},
		{"file://localhost/srv/w.db", "/srv/w.db"},
		// In memory: no file to watch or lock.
		{":memory:", ""},
		{"file::memory:?cache=shared", ""},
		{"file:x?mode=memory", ""},
	}
	for _, tt := range tests {
		if got := FilePath(tt.in); got != tt.want {
			t.Errorf("FilePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// register writes one entity through the write path.
func register(ctx context.Context, s *Store, id string) error {
	_, err := s.Register(ctx, store.Entity{Type: "session", ID: id, Lifecycle: strp("running")}, "orchestrator", unixAt(1))
	return err
}

// TestLostIdentityRefusesWrites: once the database file or a companion is
// deleted or replaced, the very next write is refused with ErrUnavailable
// (nothing is acknowledged into a file nobody will open again), Fault says
// what happened, and the loss is permanent even if a file reappears.
func TestLostIdentityRefusesWrites(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, path string)
		want string
	}{
		{"rm watchdog.db*", func(t *testing.T, path string) {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil {
					t.Fatal(err)
				}
			}
		}, "was deleted"},
		{"rm the WAL only", func(t *testing.T, path string) {
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
			}
		}, "-wal was deleted"},
		{"database replaced by a rename", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other.db")
			o, err := Open(context.Background(), other)
			if err != nil {
				t.Fatal(err)
			}
			o.Close()
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "was replaced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, path := openTest(t)
			if err := register(ctx, s, "before"); err != nil {
				t.Fatal(err)
			}
			if err := s.CheckWrite(ctx); err != nil {
				t.Fatalf("probe of a healthy store: %v", err)
			}
			if s.Fault() != nil || s.Lost() {
				t.Fatalf("fault on a healthy store: %v", s.Fault())
			}
			tt.do(t, path)

			err := register(ctx, s, "after")
			if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("write after the loss: %v, want store.ErrUnavailable saying %q", err, tt.want)
			}
			if !s.Lost() || !errors.Is(s.Fault(), store.ErrUnavailable) {
				t.Fatalf("Lost %v, Fault %v", s.Lost(), s.Fault())
			}
			if err := s.CheckWrite(ctx); !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("probe after the loss: %v", err)
			}
			// A file at the path again (the daemon's pool, or an operator's
			// restore) does not bring this process's handle back.
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.RecordHeartbeat(ctx, "session", "before", unixAt(2), ""); !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("heartbeat after the loss: %v", err)
			}
		})
	}
}

// TestRescueKeepsTheLostData: the copy taken through the open handle
// holds every acknowledged write, WAL included.
func TestRescueKeepsTheLostData(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	for i := range 50 {
		if err := register(ctx, s, "r"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	if err := register(ctx, s, "late"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write after rm: %v", err)
	}
	// Reads and refused writes open pooled connections; none may create
	// an empty database where the lost one was.
	for range 10 {
		s.List(ctx, store.Filter{})
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file reappeared at %s after the loss: %v", path, err)
	}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	copyPath, err := s.Rescue(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if want := path + ".rescued-20250301T120000Z"; copyPath != want {
		t.Errorf("rescued to %s, want %s", copyPath, want)
	}
	h, err := sql.Open("sqlite", "file:"+copyPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var n int
	if err := h.QueryRow("SELECT COUNT(*) FROM entities").Scan(&n); err != nil || n != 50 {
		t.Fatalf("rescued copy holds %d entities (%v), want the 50 acknowledged", n, err)
	}
}

// TestQuickCheckRefusesDamage: a damaged index page fails the start-up
// check with the way to recover; an intact database passes.
func TestQuickCheckRefusesDamage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := register(ctx, s, "q"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.QuickCheck(ctx); err != nil {
		t.Fatalf("intact database: %v", err)
	}
	// An index with pages of its own, and the page size, to find it.
	var root, pageSize int64
	if err := s.db.QueryRow("SELECT rootpage FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entities' AND sql IS NOT NULL ORDER BY name LIMIT 1").Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	s.Close() // checkpoints the WAL into the file

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xff", 64))
	if _, err := f.WriteAt(junk, (root-1)*pageSize+pageSize/2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(junk[:8], (root-1)*pageSize); err != nil { // the page header too
		t.Fatal(err)
	}
	f.Close()

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.QuickCheck(ctx)
	if err == nil {
		t.Fatal("quick_check passed a damaged index page")
	}
	for _, want := range []string{"is damaged", "quick_check", ".recover", "restore the latest backup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

func TestLockDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	first, err := LockDaemon(path)
	if err != nil || first == nil {
		t.Fatalf("first lock: %v %v", first, err)
	}
	// flock locks belong to the open file, so a second open in this
	// process contends like another daemon would.
	_, err = LockDaemon("file:" + path + "?_pragma=busy_timeout(1)")
	if err == nil {
		t.Fatal("a second lock of the same database was granted")
	}
	for _, want := range []string{"another watchdog daemon (pid " + strconv.Itoa(os.Getpid()) + ")", path + LockSuffix, "stop it first"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := LockDaemon(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.Release()

	if l, err := LockDaemon(":memory:"); l != nil || err != nil {
		t.Errorf("in-memory store: %v %v, want no lock", l, err)
	}
}

// TestLockDaemonNeverFollowsASymlink: a link planted at the lock's name
// is refused, and the file it points at is left as it was (a daemon
// running as root would otherwise truncate it).
func TestLockDaemonNeverFollowsASymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "precious")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "w.db")
	if err := os.Symlink(victim, path+LockSuffix); err != nil {
		t.Fatal(err)
	}
	l, err := LockDaemon(path)
	if err == nil {
		l.Release()
		t.Fatal("the lock was taken through a symlink")
	}
	if !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("refusal %q does not say the lock file is a symlink", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the symlink's target was changed: %q", b)
	}
}

// BenchmarkIdentityCheck is the cost the write path pays per transaction,
// twice (before and after): a stat(2) of the database and its -wal and
// -shm files.
func BenchmarkIdentityCheck(b *testing.B) {
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "w.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if err := s.usable(); err != nil {
			b.Fatal(err)
		}
	}
}
