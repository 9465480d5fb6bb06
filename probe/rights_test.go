package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/state"
)

// TestFilesExaminedWithTheOwnersRights: the same contract, lock and
// heartbeat file read as their owner may: root's private files are facts
// to root and nothing to nobody (no size, no content, no mtime), whose
// verdict is what it would be for files that are not there at all.
func TestFilesExaminedWithTheOwnersRights(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: to examine files as another user")
	}
	dir := t.TempDir()
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"shadow": "not json", "hb": "", "lock": ""} {
		if err := os.WriteFile(filepath.Join(private, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	h := NewHost()
	probeAs := func(o Owner, terminal bool) Observations {
		return h.Probe(context.Background(), Subject{
			HeartbeatFile: filepath.Join(private, "hb"), StartedAt: now.Add(-time.Hour), Terminal: terminal, EndedAt: now.Add(-time.Minute),
			ArtifactsRoot: private, Artifacts: []state.ArtifactSpec{{Path: "shadow", Kind: "json"}},
			LockFiles: []string{"lock"}, Owner: o,
		}, now)
	}
	root, nobody := Owner{UID: 0, Known: true}, Owner{UID: Nobody, Known: true}
	if r := probeAs(root, false); r.Heartbeat.Source != HeartbeatFile {
		t.Errorf("root reads its heartbeat file: %+v", r.Heartbeat)
	}
	if r := probeAs(nobody, false); r.Heartbeat.Source == HeartbeatFile {
		t.Errorf("nobody learnt root's heartbeat file's mtime: %+v", r.Heartbeat)
	}
	rootEnd, nobodyEnd := probeAs(root, true), probeAs(nobody, true)
	if rootEnd.Artifacts.Delivery != state.DeliveryInvalid || len(rootEnd.Locks.Present) != 1 || rootEnd.Artifacts.Checks[0].Size != 8 {
		t.Errorf("root's own view: delivery %s, locks present %v, artifacts %+v", rootEnd.Artifacts.Delivery, rootEnd.Locks.Present, rootEnd.Artifacts.Checks)
	}
	if len(nobodyEnd.Locks.Present) != 0 {
		t.Errorf("nobody learnt that root's lock file exists: %v", nobodyEnd.Locks.Present)
	}
	for _, c := range nobodyEnd.Artifacts.Checks {
		if c.Size != 0 || !c.ModTime.IsZero() || c.Status == ArtifactValid {
			t.Errorf("nobody learnt a fact of root's artifact: %+v", c)
		}
		if d := c.Detail(); strings.Contains(d, "JSON") || strings.Contains(d, "bytes") {
			t.Errorf("nobody's evidence tells of root's file: %s", d)
		}
	}
}
