package daemon

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"watchdog/internal/unixtime"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
)

// TestSeverityLogOncePerChange: a change into critical or warning (and
// from critical to warning) is one warning line naming the entity, its
// chain and its reason; staying there, calming down and the initial load
// are not logged one by one.
func TestSeverityLogOncePerChange(t *testing.T) {
	now := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	running := "running"
	ent := func(h state.Health, reasons ...state.StateReason) *store.Entity {
		return &store.Entity{Type: "session", ID: "s-1", Lifecycle: &running, Health: h, Delivery: state.DeliveryNotExpected,
			Reasons: reasons, HealthSince: now, CreatedAt: now, UpdatedAt: now}
	}
	alive := ent(state.HealthRunning)
	idle := ent(state.HealthIdle, state.StateReason{Code: state.RunHealthIdle, Message: "no heartbeat since " + state.Stamp(now.Add(-time.Minute)), Since: unixtime.Of(now.Add(-time.Minute))})
	stalled := ent(state.HealthStalled, state.StateReason{Code: state.RunHealthStalled, Message: "no heartbeat since " + state.Stamp(now.Add(-time.Hour)), Since: unixtime.Of(now.Add(-time.Hour))})
	legacy := &store.Entity{Type: "session", ID: "s-1", Health: state.HealthStalled}

	core, logs := observer.New(zapcore.DebugLevel)
	l := &severityLog{log: zap.New(core), now: func() time.Time { return now }}
	// The initial load: no line per entity, then one summary.
	l.change(nil, stalled)
	if logs.Len() != 0 {
		t.Fatalf("the load logged entities one by one: %v", logs.All())
	}
	l.loaded(live.Counts{OpenBySeverity: map[state.Severity]int{state.SeverityCritical: 1}, QueueBySeverity: map[state.Severity]int{state.SeverityCritical: 1}})
	if s := logs.TakeAll(); len(s) != 1 || s[0].Level != zapcore.WarnLevel || s[0].ContextMap()["open_critical"] != int64(1) {
		t.Fatalf("start-up summary: %v", s)
	}

	for _, c := range []struct {
		name      string
		prev, cur *store.Entity
		severity  string // "" = no line
		code      state.ReasonCode
	}{
		{"registered critical", nil, stalled, "critical", state.RunHealthStalled},
		{"stays critical", stalled, stalled, "", ""},
		{"critical to warning", stalled, idle, "warning", state.RunHealthIdle},
		{"stays warning", idle, idle, "", ""},
		{"warning to critical", idle, stalled, "critical", state.RunHealthStalled},
		{"calms down", stalled, alive, "", ""},
		{"neutral to warning", alive, idle, "warning", state.RunHealthIdle},
		{"legacy to critical", legacy, stalled, "critical", state.RunHealthStalled},
		{"to legacy", stalled, legacy, "", ""},
	} {
		l.change(c.prev, c.cur)
		got := logs.TakeAll()
		if c.severity == "" {
			if len(got) != 0 {
				t.Errorf("%s: logged %v", c.name, got)
			}
			continue
		}
		if len(got) != 1 {
			t.Errorf("%s: %d lines, want 1: %v", c.name, len(got), got)
			continue
		}
		m := got[0].ContextMap()
		if got[0].Level != zapcore.WarnLevel || m["severity"] != c.severity || m["entity_type"] != "session" || m["entity_id"] != "s-1" ||
			m["reason_code"] != string(c.code) || m["chain"] == "" || m["reason"] == "" {
			t.Errorf("%s: %s %v", c.name, got[0].Level, m)
		}
	}
}
