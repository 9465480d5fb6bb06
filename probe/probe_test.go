//go:build linux

package probe

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
)

func codesOf(r Result) []state.ReasonCode {
	var codes []state.ReasonCode
	for _, reason := range r.Reasons {
		codes = append(codes, reason.Code)
	}
	return codes
}

// TestProbe runs every check for real: live and killed processes, heartbeat
// files aged with Chtimes, artifact trees and lock files on disk.
func TestProbe(t *testing.T) {
	ctx := t.Context()
	h := NewHost()
	now := time.Now()
	dir := t.TempDir()
	hbFresh := filepath.Join(dir, "fresh.hb")
	touch(t, hbFresh, now.Add(-time.Minute))
	hbIdle := filepath.Join(dir, "idle.hb")
	touch(t, hbIdle, now.Add(-20*time.Minute))
	if err := os.WriteFile(filepath.Join(dir, "review.md"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".lock")
	touch(t, lock, now)

	live := testenv.Sleep(t).Process.Pid
	liveID := identify(t, h, live)
	killed := testenv.Sleep(t)
	killedID := identify(t, h, killed.Process.Pid)
	_ = killed.Process.Kill()
	_ = killed.Wait()

	entity := func(id Identity) Subject {
		return Subject{
			PID: id.PID, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID,
			HeartbeatFile: hbFresh, ArtifactsRoot: dir,
			Artifacts: []state.ArtifactSpec{{Path: "review.md", Required: true, MinBytes: 1}},
		}
	}
	for _, tc := range []struct {
		name     string
		edit     func(*Subject)
		health   state.Health
		delivery state.Delivery
		codes    []state.ReasonCode
	}{
		{"healthy", func(*Subject) {}, state.HealthRunning, state.DeliveryPassed, nil},
		{"idle heartbeat", func(t *Subject) { t.HeartbeatFile = hbIdle }, state.HealthIdle, state.DeliveryPassed, []state.ReasonCode{state.RunHealthIdle}},
		{"no heartbeat declared", func(t *Subject) { t.HeartbeatFile, t.NoHeartbeat = "", true }, state.HealthRunning, state.DeliveryPassed, nil},
		{"artifacts skipped", func(t *Subject) { t.SkipArtifacts = true }, state.HealthRunning, state.DeliveryUnknown, nil},
		{"missing artifact", func(t *Subject) { t.Artifacts[0].Path = "absent.md" }, state.HealthRunning, state.DeliveryMissing, []state.ReasonCode{state.RunDeliveryMissing}},
		{"supervisor gone", func(t *Subject) {
			t.SupervisorPID, t.SupervisorStartTime = killedID.PID, killedID.StartTime
		}, state.HealthOrphaned, state.DeliveryPassed, []state.ReasonCode{state.RunHealthOrphaned}},
		{"supervisor alive", func(t *Subject) { t.SupervisorPID = os.Getpid() }, state.HealthRunning, state.DeliveryPassed, nil},
		{"parent ended", func(t *Subject) { t.ParentTerminal = true }, state.HealthOrphaned, state.DeliveryPassed, []state.ReasonCode{state.RunHealthOrphaned}},
		{"ended but still alive", func(t *Subject) { t.Terminal, t.EndedAt = true, now }, state.HealthOrphaned, state.DeliveryPassed, []state.ReasonCode{state.RunHealthOrphaned}},
		{"ended with a stale lock", func(t *Subject) {
			t.Terminal, t.LockFiles, t.StartTime, t.StartTicks = true, []string{lock}, killedID.StartTime, killedID.StartTicks
			t.PID = killedID.PID
		}, state.HealthDegraded, state.DeliveryPassed, []state.ReasonCode{state.RunHealthStaleLock}},
		{"slow", func(t *Subject) { t.StartedAt = now.Add(-2 * time.Hour) }, state.HealthRunning, state.DeliveryPassed, []state.ReasonCode{state.RunHealthSlow}},
		{"other host", func(t *Subject) { t.HostID = "elsewhere"; t.HeartbeatFile = hbIdle }, state.HealthDisconnected, state.DeliveryPassed, []state.ReasonCode{state.RunHealthDisconnected}},
		{"no pid yet", func(t *Subject) { t.PID, t.StartTime, t.StartedAt = 0, unixAt(0), now }, state.HealthRunning, state.DeliveryPassed, []state.ReasonCode{state.RunHealthLivenessUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subj := entity(liveID)
			subj.Artifacts = append([]state.ArtifactSpec(nil), subj.Artifacts...)
			tc.edit(&subj)
			r := h.Probe(ctx, subj, DefaultThresholds, now)
			if r.Health != tc.health || r.Delivery != tc.delivery || !reflect.DeepEqual(codesOf(r), tc.codes) {
				t.Errorf("got %v/%v %v, want %v/%v %v", r.Health, r.Delivery, codesOf(r), tc.health, tc.delivery, tc.codes)
				for _, e := range r.Evidence() {
					t.Logf("evidence: %s", e.Detail)
				}
			}
		})
	}

	dead := h.Probe(ctx, entity(killedID), DefaultThresholds, now)
	if dead.Health != state.HealthProcessDead || dead.Liveness != Dead {
		t.Errorf("killed process: %v/%v", dead.Health, dead.Liveness)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the probe removed the lock: %v", err)
	}
}

func TestProbeHealthyAllocations(t *testing.T) {
	ctx := t.Context()
	if raceEnabled {
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
	if n := testing.AllocsPerRun(50, func() { h.Probe(ctx, subj, DefaultThresholds, now) }); n > 1 {
		t.Errorf("Probe of a healthy entity allocates %v times, want at most 1", n)
	}
}
