//go:build linux

package judge

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/state"
)

func codesOf(r Result) []state.ReasonCode {
	var codes []state.ReasonCode
	for _, reason := range r.Reasons {
		codes = append(codes, reason.Code)
	}
	return codes
}

// TestProbe looks and judges for real: live and killed processes, heartbeat
// files aged with Chtimes, artifact trees and lock files on disk.
func TestProbe(t *testing.T) {
	touch := func(t *testing.T, path string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	identify := func(t *testing.T, h *probe.Host, pid int) probe.Identity {
		t.Helper()
		id, err := h.Identify(pid)
		if err != nil {
			t.Fatalf("Identify(%d): %v", pid, err)
		}
		return id
	}
	ctx := t.Context()
	h := probe.NewHost()
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

	entity := func(id probe.Identity) probe.Subject {
		return probe.Subject{
			PID: id.PID, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID,
			HeartbeatFile: hbFresh, ArtifactsRoot: dir,
			Artifacts: []state.ArtifactSpec{{Path: "review.md", Required: true, MinBytes: 1}},
		}
	}
	for _, tc := range []struct {
		name     string
		edit     func(*probe.Subject)
		health   state.Health
		delivery state.Delivery
		codes    []state.ReasonCode
	}{
		{"healthy", func(*probe.Subject) {}, state.HealthRunning, state.DeliveryPassed, nil},
		{"idle heartbeat", func(t *probe.Subject) { t.HeartbeatFile = hbIdle }, state.HealthIdle, state.DeliveryPassed, []state.ReasonCode{state.RunHealthIdle}},
		{"no heartbeat declared", func(t *probe.Subject) { t.HeartbeatFile, t.NoHeartbeat = "", true }, state.HealthRunning, state.DeliveryPassed, nil},
		{"artifacts skipped", func(t *probe.Subject) { t.SkipArtifacts = true }, state.HealthRunning, state.DeliveryUnknown, nil},
		{"missing artifact", func(t *probe.Subject) { t.Artifacts[0].Path = "absent.md" }, state.HealthRunning, state.DeliveryMissing, []state.ReasonCode{state.RunDeliveryMissing}},
		{"supervisor gone", func(t *probe.Subject) {
			t.SupervisorPID, t.SupervisorStartTime = killedID.PID, killedID.StartTime
		}, state.HealthOrphaned, state.DeliveryPassed, []state.ReasonCode{state.RunHealthOrphaned}},
		{"supervisor alive", func(t *probe.Subject) { t.SupervisorPID = os.Getpid() }, state.HealthRunning, state.DeliveryPassed, nil},
		{"parent ended", func(t *probe.Subject) { t.ParentTerminal = true }, state.HealthOrphaned, state.DeliveryPassed, []state.ReasonCode{state.RunHealthOrphaned}},
		{"ended but still alive", func(t *probe.Subject) { t.Terminal, t.EndedAt = true, now }, state.HealthOrphaned, state.DeliveryPassed, []state.ReasonCode{state.RunHealthOrphaned}},
		{"ended with a stale lock", func(t *probe.Subject) {
			t.Terminal, t.LockFiles, t.StartTime, t.StartTicks = true, []string{lock}, killedID.StartTime, killedID.StartTicks
			t.PID = killedID.PID
		}, state.HealthDegraded, state.DeliveryPassed, []state.ReasonCode{state.RunHealthStaleLock}},
		{"slow", func(t *probe.Subject) { t.StartedAt = now.Add(-2 * time.Hour) }, state.HealthRunning, state.DeliveryPassed, []state.ReasonCode{state.RunHealthSlow}},
		{"other host", func(t *probe.Subject) { t.HostID = "elsewhere"; t.HeartbeatFile = hbIdle }, state.HealthDisconnected, state.DeliveryPassed, []state.ReasonCode{state.RunHealthDisconnected}},
		{"no pid yet", func(t *probe.Subject) { t.PID, t.StartTime, t.StartedAt = 0, time.Unix(0, 0), now }, state.HealthRunning, state.DeliveryPassed, []state.ReasonCode{state.RunHealthLivenessUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			subj := entity(liveID)
			subj.Artifacts = append([]state.ArtifactSpec(nil), subj.Artifacts...)
			tc.edit(&subj)
			r := Classify(h.Probe(ctx, subj, now), DefaultThresholds, now)
			if r.Health != tc.health || r.Delivery != tc.delivery || !reflect.DeepEqual(codesOf(r), tc.codes) {
				t.Errorf("got %v/%v %v, want %v/%v %v", r.Health, r.Delivery, codesOf(r), tc.health, tc.delivery, tc.codes)
				for _, e := range r.Evidence() {
					t.Logf("evidence: %s", e.Detail)
				}
			}
		})
	}

	dead := Classify(h.Probe(ctx, entity(killedID), now), DefaultThresholds, now)
	if dead.Health != state.HealthProcessDead || dead.Liveness != probe.Dead {
		t.Errorf("killed process: %v/%v", dead.Health, dead.Liveness)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the probe removed the lock: %v", err)
	}
}
