package probe

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLastHeartbeat holds the readers' heartbeat to the judgement's: the
// same file, posted time and moment give the same time and source as
// CheckHeartbeat, and no heartbeat at all is zero (never the start).
func TestLastHeartbeat(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	fresh := filepath.Join(dir, "fresh.hb")
	touch(t, fresh, now.Add(-5*time.Second))
	future := filepath.Join(dir, "future.hb")
	touch(t, future, now.Add(2*time.Hour))
	absent := filepath.Join(dir, "absent.hb")

	for _, tc := range []struct {
		name     string
		file     string
		posted   time.Time
		fromFile bool
		none     bool
	}{
		{"file newer than posted", fresh, now.Add(-4 * time.Minute), true, false},
		{"posted newer than file", fresh, now.Add(-time.Second), false, false},
		{"file only", fresh, time.Time{}, true, false},
		{"missing file, posted", absent, now.Add(-time.Minute), false, false},
		{"another host's entity: posted only", "", now.Add(-time.Minute), false, false},
		{"future mtime judged as the judgement does", future, time.Time{}, true, false},
		{"missing file, none posted", absent, time.Time{}, false, true},
		{"nothing", "", time.Time{}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, fromFile := LastHeartbeat(Owner{UID: os.Getuid(), Known: true}, tc.file, tc.posted, now)
			if tc.none {
				if !at.IsZero() || fromFile {
					t.Fatalf("got %v (file %v), want none", at, fromFile)
				}
				return
			}
			o := CheckHeartbeat(tc.file, tc.posted, now.Add(-time.Hour), now)
			if !at.Equal(o.At) || fromFile != (o.Source == HeartbeatFile) || fromFile != tc.fromFile {
				t.Fatalf("got %v (file %v), judgement %v (%v); want file %v", at, fromFile, o.At, o.Source, tc.fromFile)
			}
		})
	}
}
