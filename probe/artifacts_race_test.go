//go:build linux

package probe

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"watchdog/state"
)

// watchOpens watches dir with inotify for opens and reads of anything in
// it (and of dir itself) and returns a function that counts the events
// seen so far.
func watchOpens(t *testing.T, dir string) func() int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	seen := 0
	buf := make([]byte, 64<<10)
	return func() int {
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EAGAIN || n <= 0 {
				return seen
			}
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
					t.Fatal("inotify queue overflowed: events were lost")
				}
				seen++
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// TestRenameRaceNeverOpensOutside is issue 11's rename race: while checks
// run back to back, another goroutine swaps a directory inside the root
// with a symlink to an outside directory holding a valid x.json (atomic
// RENAME_EXCHANGE, as fast as it can). With per-component lstat followed
// by a whole-path open the probe read the outside file; through the root
// handle it cannot, and inotify on the outside directory must see no open
// and no read at all.
func TestRenameRaceNeverOpensOutside(t *testing.T) {
	backends(t, testRenameRace)
}

func testRenameRace(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, dir := range []string{outside, filepath.Join(root, "d")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"ok": true}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "swap")); err != nil {
		t.Fatal(err)
	}
	opens := watchOpens(t, outside)

	specs := []state.ArtifactSpec{
		{Path: "d/x.json", Kind: "json", Required: true},
		{Path: "d/*.json", Kind: "json", Required: true},
		{Path: "*/x.json", Kind: "json", Required: true},
		{Path: "d", Kind: "dir", Required: true},
	}
	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		a, b := filepath.Join(root, "d"), filepath.Join(root, "swap")
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
			swaps.Add(1)
		}
	})
	duration := 3 * time.Second
	if testing.Short() {
		duration = 500 * time.Millisecond
	}
	var checks, valid, escaped int
	for end := time.Now().Add(duration); time.Now().Before(end); {
		res := CheckArtifacts(t.Context(), root, specs, unixAt(0))
		checks++
		for _, c := range res.Checks {
			switch {
			case c.Status == ArtifactValid:
				valid++
			case c.Escapes:
				escaped++
			}
		}
	}
	close(stop)
	wg.Wait()
	if n := opens(); n != 0 {
		t.Fatalf("%d opens or reads in the outside directory during %d checks and %d swaps", n, checks, swaps.Load())
	}
	t.Logf("%d checks, %d swaps, %d valid and %d escaping verdicts, 0 opens outside", checks, swaps.Load(), valid, escaped)
	if valid == 0 || escaped == 0 || swaps.Load() < 100 {
		t.Fatalf("the race did not happen: %d valid, %d escaping verdicts, %d swaps", valid, escaped, swaps.Load())
	}
	// The watch works: reading the outside file is seen.
	if _, err := os.ReadFile(filepath.Join(outside, "x.json")); err != nil {
		t.Fatal(err)
	}
	if opens() == 0 {
		t.Fatal("inotify did not see a read of the outside file")
	}
}
