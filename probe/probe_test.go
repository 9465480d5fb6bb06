//go:build linux

package probe

import (
	"path/filepath"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
)

func TestProbeHealthyAllocations(t *testing.T) {
	ctx := t.Context()
	if testenv.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	h := NewHost()
	now := time.Now()
	dir := t.TempDir()
	touch(t, filepath.Join(dir, "hb"), now)
	touch(t, filepath.Join(dir, "a.md"), now)
	id := identify(t, h, testenv.Sleep(t).Process.Pid)
	subj := Subject{
		PID: id.PID, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID,
		HeartbeatFile: filepath.Join(dir, "hb"), ArtifactsRoot: dir,
		Artifacts: []state.ArtifactSpec{{Path: "a.md", Required: true}},
	}
	// The artifact result's slice, nothing else.
	if n := testing.AllocsPerRun(50, func() { h.Probe(ctx, subj, now) }); n > 1 {
		t.Errorf("Probe of a healthy entity allocates %v times, want at most 1", n)
	}
}
