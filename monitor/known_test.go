package monitor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"watchdog/state"
	"watchdog/store"
)

// TestWatchedFileReadOnlyWhenChanged: the sweep's look at a watched
// heartbeat file (HeartbeatFileAt) stats it once, then not again until an
// event tells a change (a touch, a removal, lost events), another owner
// asks, or fileTrust passes; each answer is what a stat would read now.
func TestWatchedFileReadOnlyWhenChanged(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.HeartbeatFile = filepath.Join(t.TempDir(), "s.hb")
	h.mtime[e.HeartbeatFile] = t0
	h.update(e)
	h.step()
	h.lstats = 0
	h.clock.Advance(time.Minute) // a touch below comes before now
	ctx := context.Background()
	look := func(step string, want time.Time, stats int) {
		t.Helper()
		at, ok := h.m.HeartbeatFileAt(&e)
		if !ok || !at.Equal(want) || h.lstats != stats {
			t.Errorf("%s: %v %v after %d stats; want %v after %d", step, at, ok, h.lstats, want, stats)
		}
	}
	look("the first look", t0, 1)
	look("unchanged", t0, 1)
	look("unchanged again", t0, 1)
	if n := h.m.HeartbeatFileStatsSkipped(); n != 2 {
		t.Errorf("stats skipped: %d, want 2", n)
	}

	touched := t0.Add(30 * time.Second)
	h.mtime[e.HeartbeatFile] = touched
	look("touched, no event yet", t0, 1) // the event comes to Run's loop
	h.m.fileChanged(ctx, e.HeartbeatFile)
	look("after the touch's event", touched, 2)
	look("unchanged since", touched, 2)

	delete(h.mtime, e.HeartbeatFile)
	h.m.fileChanged(ctx, e.HeartbeatFile)
	look("removed", time.Time{}, 3)
	look("still missing", time.Time{}, 3)

	h.mtime[e.HeartbeatFile] = touched
	h.m.fileEventsLost(ctx, fsnotify.ErrEventOverflow)
	look("after lost events", touched, 4)

	other := e
	other.OwnerUID, other.HasOwnerUID = 1000, true
	if at, ok := h.m.HeartbeatFileAt(&other); !ok || !at.Equal(touched) || h.lstats != 5 {
		t.Errorf("another owner: %v %v after %d stats; want a read of its own", at, ok, h.lstats)
	}
	look("the first owner again", touched, 6)

	h.clock.Advance(fileTrust + time.Second)
	look("past fileTrust", touched, 7)

	h.m.busySince.Store(1)
	if _, ok := h.m.HeartbeatFileAt(&e); ok {
		t.Error("answered while a step runs, which may hold events unread")
	}
	h.m.busySince.Store(0)

	moved := e
	moved.HeartbeatFile = filepath.Join(filepath.Dir(e.HeartbeatFile), "other.hb")
	if _, ok := h.m.HeartbeatFileAt(&moved); ok {
		t.Error("answered for a file the monitor does not watch for the entity")
	}
	h.m.Forget("session", "s")
	h.step()
	if _, ok := h.m.HeartbeatFileAt(&e); ok {
		t.Error("answered after the entity went")
	}
}

// TestBlindWatchNeverAnswers: a file whose directory's events do not tell
// every change of its path is left to the probe's stat: its directory
// reached through a symlink, or removed (the watch goes with it), the file
// a symlink (its target's touch is told elsewhere), or a file polled for
// want of a watch.
func TestBlindWatchNeverAnswers(t *testing.T) {
	h := newHarness(t, Settings{})
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "current")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"symlinked": filepath.Join(link, "s.hb"),
		"removed":   filepath.Join(gone, "s.hb"),
		"polled":    filepath.Join(t.TempDir(), "no-such-dir", "s.hb"),
		"watched":   filepath.Join(real, "s.hb"),
		"a symlink": filepath.Join(real, "link.hb"),
	}
	h.links[files["a symlink"]] = true
	ents := map[string]store.Entity{}
	for id, path := range files {
		e := session(id, 42)
		e.HeartbeatFile = path
		h.mtime[path] = t0
		h.update(e)
		ents[id] = e
	}
	h.step()
	h.m.fileEvent(context.Background(), fsnotify.Event{Name: gone, Op: fsnotify.Remove})
	h.m.fileChanged(context.Background(), files["removed"]) // no event comes after: the watch is gone
	for id, want := range map[string]bool{"symlinked": false, "removed": false, "polled": false, "watched": true, "a symlink": false} {
		e := ents[id]
		if _, ok := h.m.HeartbeatFileAt(&e); ok != want {
			t.Errorf("%s: answered %v, want %v", id, ok, want)
		}
	}
}

// TestUnreadableFileIsTheProbes: a stat that fails for another cause than
// a missing file (here the owner's rights could not be taken) answers
// nothing, so the probe looks and says why.
func TestUnreadableFileIsTheProbes(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.HeartbeatFile = filepath.Join(t.TempDir(), "s.hb")
	h.update(e)
	h.step()
	h.m.opt.StatMtime = func(*store.Entity) (time.Time, error) {
		return time.Time{}, errors.New("the file could not be examined with its owner's rights")
	}
	if _, ok := h.m.HeartbeatFileAt(&e); ok {
		t.Error("answered for a file that could not be read")
	}
	h.m.opt.StatMtime = func(*store.Entity) (time.Time, error) { return h.clock.Now().Add(time.Hour), nil }
	if _, ok := h.m.HeartbeatFileAt(&e); ok {
		t.Error("answered with an mtime from the future, whose ctime the probe reads")
	}
}

// TestLstatMtime: the read for the sweep is the file's own mtime, and a
// symlink is told apart, never followed.
func TestLstatMtime(t *testing.T) {
	dir := t.TempDir()
	file, link := filepath.Join(dir, "s.hb"), filepath.Join(dir, "link.hb")
	at := time.Unix(1_700_000_000, 0)
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, at, at); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if mt, isLink, err := lstatMtime(&store.Entity{HeartbeatFile: file}); err != nil || isLink || !mt.Equal(at) {
		t.Errorf("the file: %v %v %v, want %v", mt, isLink, err, at)
	}
	if _, isLink, err := lstatMtime(&store.Entity{HeartbeatFile: link}); err != nil || !isLink {
		t.Errorf("the symlink: link %v, %v", isLink, err)
	}
	if _, _, err := lstatMtime(&store.Entity{HeartbeatFile: filepath.Join(dir, "none")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestIdleWrittenBeforeAHeardTouchIsJudgedAgain: a sweep's look read the
// file's last read before a touch whose event the monitor then heard; its
// idle comes back from the store after the event, and is judged again at
// once. An idle written after the event is the store's to keep.
func TestIdleWrittenBeforeAHeardTouchIsJudgedAgain(t *testing.T) {
	h := newHarness(t, Settings{})
	e := session("s", 42)
	e.HeartbeatFile = filepath.Join(t.TempDir(), "s.hb")
	h.mtime[e.HeartbeatFile] = t0
	e.UpdatedAt = t0
	h.update(e)
	h.step()
	h.clock.Advance(time.Minute)
	judgedAt := h.clock.Now() // the sweep judges from its cached read
	h.clock.Advance(time.Second)
	h.mtime[e.HeartbeatFile] = h.clock.Now()
	h.m.fileChanged(context.Background(), e.HeartbeatFile) // running as the monitor knows it: no check
	if got := whats(h.step()); len(got) != 0 {
		t.Fatalf("a touch of a running entity's file: %v", got)
	}
	idle := e
	idle.Health, idle.UpdatedAt = state.HealthIdle, judgedAt
	h.update(idle)
	if got := whats(h.step()); !reflect.DeepEqual(got, []string{"check session/s"}) {
		t.Errorf("idle judged before the heard touch: %v, want a check", got)
	}
	later := idle
	later.UpdatedAt = h.clock.Now().Add(time.Second)
	h.clock.Advance(2 * time.Second)
	h.update(later)
	if got := whats(h.step()); len(got) != 0 {
		t.Errorf("idle judged after the touch was heard: %v, want none", got)
	}
}
