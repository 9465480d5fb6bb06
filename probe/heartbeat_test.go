package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/state"
)

func touch(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestCheckHeartbeat(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	aged := filepath.Join(dir, "aged.hb")
	touch(t, aged, now.Add(-15*time.Minute))
	future := filepath.Join(dir, "future.hb")
	touch(t, future, now.Add(2*time.Hour))
	absent := filepath.Join(dir, "absent.hb")
	notDir := filepath.Join(aged, "x") // a path through a file: ENOTDIR, no heartbeat
	start := now.Add(-90 * time.Minute)

	for _, tc := range []struct {
		name    string
		file    string
		posted  time.Time
		started time.Time
		source  HeartbeatSource
		age     time.Duration // expected, compared within a minute
		skew    bool
	}{
		{"file mtime", aged, time.Time{}, start, HeartbeatFile, 15 * time.Minute, false},
		{"posted newer than file wins", aged, now.Add(-time.Minute), start, HeartbeatPosted, time.Minute, false},
		{"file newer than posted wins", aged, now.Add(-time.Hour), start, HeartbeatFile, 15 * time.Minute, false},
		{"missing file ages from start", absent, time.Time{}, start, HeartbeatFromStart, 90 * time.Minute, false},
		{"path through a file ages from start", notDir, time.Time{}, start, HeartbeatFromStart, 90 * time.Minute, false},
		{"never sent one ages from start", "", time.Time{}, start, HeartbeatFromStart, 90 * time.Minute, false},
		{"nothing known", "", time.Time{}, time.Time{}, HeartbeatNone, 0, false},
		// The mtime claims 2h ahead; the ctime (when the file was really
		// touched, just now) is used instead.
		{"future file mtime", future, time.Time{}, start, HeartbeatFile, 0, true},
		{"future posted time clamped to now", "", now.Add(time.Hour), start, HeartbeatPosted, 0, true},
		{"half a second ahead is not skew", "", now.Add(500 * time.Millisecond), start, HeartbeatPosted, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := CheckHeartbeat(tc.file, tc.posted, tc.started, now)
			if o.Source != tc.source {
				t.Fatalf("source %v, want %v (%s)", o.Source, tc.source, o.Detail())
			}
			if d := o.Age - tc.age; d < -time.Minute || d > time.Minute || o.Age < 0 {
				t.Errorf("age %v, want about %v", o.Age, tc.age)
			}
			if (o.Skew > 0) != tc.skew {
				t.Errorf("skew %v, want skew %v", o.Skew, tc.skew)
			}
			if o.At.After(now) {
				t.Errorf("At %v is after now %v: trusted beyond its claim", o.At, now)
			}
			if tc.skew && !strings.Contains(o.Detail(), "in the future, clamped") {
				t.Errorf("detail %q", o.Detail())
			}
		})
	}
}

func TestCheckHeartbeatBrokenFile(t *testing.T) {
	// A heartbeat file that cannot be checked is not a missing heartbeat:
	// the age is unknown rather than counted from the start.
	o := CheckHeartbeat("/tmp/hb\x00", unixAt(0), time.Now().Add(-2*time.Hour), time.Now())
	if o.Known() || o.FileErr == nil || o.FileMissing {
		t.Errorf("got %+v", o)
	}
	if !strings.Contains(o.Detail(), "heartbeat age unknown") {
		t.Errorf("detail %q", o.Detail())
	}
}

func TestCheckHeartbeatDetail(t *testing.T) {
	now := time.Now()
	at := now.Add(-71*time.Minute - 30*time.Second)
	o := CheckHeartbeat("", at, unixAt(0), now)
	o.Progress = "step 3 of 7"
	if got, want := o.Detail(), "last heartbeat "+state.Stamp(at)+" (posted heartbeat); progress: step 3 of 7"; got != want {
		t.Errorf("detail %q, want %q", got, want)
	}
}

// TestKnownHeartbeatFileIsNotStated: a heartbeat file whose mtime the
// daemon's watch vouches for (Subject.HeartbeatFileKnown) is judged from
// that mtime, or read as missing for a zero one, never from a stat: the
// file on disk here says otherwise each time.
func TestKnownHeartbeatFileIsNotStated(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	hb := filepath.Join(dir, "s.hb")
	touch(t, hb, now.Add(-15*time.Minute))
	start := now.Add(-90 * time.Minute)
	h := NewHost()
	for _, tc := range []struct {
		name    string
		at      time.Time
		source  HeartbeatSource
		age     time.Duration
		missing bool
	}{
		{"the known mtime, not the file's", now.Add(-2 * time.Minute), HeartbeatFile, 2 * time.Minute, false},
		{"known missing, though it is there", time.Time{}, HeartbeatFromStart, 90 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Subject{HeartbeatFile: hb, HeartbeatFileKnown: true, HeartbeatFileAt: tc.at, StartedAt: start}
			if s.readsFiles() {
				t.Error("a known heartbeat file counts as a file to read: the owner's identity would be taken for nothing")
			}
			o := h.Probe(t.Context(), s, now).Heartbeat
			if o.Source != tc.source || o.Age.Round(time.Minute) != tc.age || o.FileMissing != tc.missing || o.File != hb {
				t.Errorf("%s: source %v age %v missing %v file %q; want %v %v %v", o.Detail(), o.Source, o.Age, o.FileMissing, o.File, tc.source, tc.age, tc.missing)
			}
		})
	}
}
