package daemon

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"watchdog/internal/deadline"
	"watchdog/internal/testenv"
	"watchdog/store/sqlite"
)

// TestReadyChecksTheStoreWhenAsked: with no tick, a disk that filled
// while nobody asked reads not ready at the next /readyz, not at a
// check's next turn; the store watch's alarm stays a minute away while
// the store is ready and comes within a second once it is not; and the
// daemon reads ready again by the asks alone once space is freed
// (ADR-0055).
func TestReadyChecksTheStoreWhenAsked(t *testing.T) {
	mnt := mountTmpfsOrSkip(t, "size=8m")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(mnt, "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	d := &daemon{st: st, log: zap.NewNop(), storeAlarm: deadline.New().Signal(), watchCtx: ctx, lastSweep: now, sweepGap: time.Minute}
	d.checkStore(ctx)
	if err := d.ready(); err != nil {
		t.Fatalf("ready on an empty disk: %v", err)
	}
	if at, ok := d.storeAlarm.Pending(); !ok || time.Until(at) < storeCheckSlow/2 {
		t.Fatalf("the ready store's next check is at %s (pending %v), want about %s away", at, ok, storeCheckSlow)
	}

	fill(t, filepath.Join(mnt, "filler"))
	// Past storeAskFresh, as a later request would be.
	d.mu.Lock()
	d.storeChecked = d.storeChecked.Add(-time.Second)
	d.mu.Unlock()
	if err := d.ready(); err == nil || !strings.Contains(err.Error(), "is full") {
		t.Fatalf("ready on a full disk: %v, want the disk full", err)
	}
	if at, ok := d.storeAlarm.Pending(); !ok || time.Until(at) > storeCheckEvery {
		t.Fatalf("the failing store's next check is at %s (pending %v), want within %s", at, ok, storeCheckEvery)
	}

	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "ready again once space is freed", ceiling, func() (bool, string) {
		d.mu.Lock()
		d.lastSweep = time.Now()
		d.mu.Unlock()
		err := d.ready()
		return err == nil, "ready: " + errString(err)
	})
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// fill writes path until the disk holding it is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// mountTmpfsOrSkip mounts a tmpfs with opts on a fresh directory, or
// skips the test where that cannot be done (not root).
func mountTmpfsOrSkip(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a file system")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			unix.Unmount(dir, unix.MNT_DETACH) //nolint:errcheck // best effort
		}
	})
	return dir
}
