package judge

import (
	"testing"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
)

// BenchmarkClassify separates the healthy path, which every sweep takes
// for every running entity and which must not allocate, from an unhealthy
// one, which formats its reasons.
func BenchmarkClassify(b *testing.B) {
	alive := probe.PIDObservation{Subject: probe.PIDSubject{PID: 4242, StartTime: unixtime.FromSeconds(1716517000)}, Liveness: probe.Alive, State: 'S', StartTime: unixtime.FromSeconds(1716517000), PPID: 1}
	dead := probe.PIDObservation{Subject: alive.Subject, Liveness: probe.Dead, Cause: probe.CauseNoSuchProcess}
	now := unixtime.FromSeconds(1716520000)
	hb := func(age time.Duration) probe.HeartbeatObservation {
		return probe.HeartbeatObservation{Source: probe.HeartbeatFile, File: "/run/s.hb", Claimed: now.Add(-age), At: now.Add(-age), Age: age}
	}
	checks := []probe.ArtifactCheck{{Spec: state.ArtifactSpec{Path: "review.md", Required: true}, Status: probe.ArtifactMissing, Rel: "review.md", Root: "/runs", Problem: "does not exist"}}
	for _, bc := range []struct {
		name string
		obs  probe.Observations
	}{
		{"healthy", probe.Observations{PID: alive, Heartbeat: hb(time.Minute), Artifacts: probe.ArtifactResult{Delivery: state.DeliveryNotExpected}}},
		{"dead", probe.Observations{PID: dead, Heartbeat: hb(71 * time.Minute), Artifacts: probe.ArtifactResult{Delivery: state.DeliveryMissing, Checks: checks}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Classify(bc.obs, DefaultThresholds, now)
			}
		})
	}
}
