package state

import (
	"testing"
	"time"

	"watchdog/internal/unixtime"
)

func TestRender(t *testing.T) {
	at := time.Date(2026, 11, 23, 14, 2, 11, 0, time.UTC)
	msg := "no heartbeat since " + Stamp(at)
	for _, tc := range []struct {
		name string
		r    StateReason
		now  time.Time
		want string
	}{
		{"no moment", StateReason{Message: "pid 4 not running"}, at, "pid 4 not running"},
		{"twelve minutes", StateReason{Message: msg, Since: unixtime.Of(at)}, at.Add(12*time.Minute + 30*time.Second), "no heartbeat since 2026-11-23 14:02:11Z, 12m ago"},
		{"a day later", StateReason{Message: msg, Since: unixtime.Of(at)}, at.Add(26 * time.Hour), msg + ", 1d ago"},
		{"clock behind", StateReason{Message: msg, Since: unixtime.Of(at)}, at.Add(-time.Minute), msg + ", in the future"},
	} {
		if got := Render(tc.r, tc.now); got != tc.want {
			t.Errorf("%s: Render = %q, want %q", tc.name, got, tc.want)
		}
	}
	rs := []StateReason{{Message: msg, Since: unixtime.Of(at)}}
	out := Rendered(rs, at.Add(time.Minute))
	if out[0].Message != msg+", 1m ago" || rs[0].Message != msg {
		t.Errorf("Rendered changed the input or rendered wrong: %q, input %q", out[0].Message, rs[0].Message)
	}
}

// TestSameFindings: what a sweep compares before it writes. Moments and
// messages are part of the finding (they carry no ages), when the evidence
// was fetched is not.
func TestSameFindings(t *testing.T) {
	at := unixAt(1000)
	base := func() []StateReason {
		r := Observed(RunHealthProcessDead, "process is gone (zombie)", EvidenceRef{Kind: EvidenceToolResult, Detail: "pid 7 zombie", FetchedAt: unixtime.Of(at)})
		r.Since = unixtime.Of(at)
		return []StateReason{r}
	}
	for _, tc := range []struct {
		name   string
		change func(r *StateReason)
		same   bool
	}{
		{"identical", func(*StateReason) {}, true},
		{"fetched later", func(r *StateReason) { r.Evidence[0].FetchedAt = unixtime.Of(at.Add(time.Minute)) }, true},
		{"since to the microsecond as stored", func(r *StateReason) { r.Since = unixtime.Of(at.Add(100 * time.Nanosecond)) }, true},
		{"message changed", func(r *StateReason) { r.Message = "process is gone (no such process)" }, false},
		{"detail changed", func(r *StateReason) { r.Evidence[0].Detail = "pid 7 gone" }, false},
		{"another moment", func(r *StateReason) { r.Since = unixtime.Of(at.Add(time.Second)) }, false},
		{"another code", func(r *StateReason) { r.Code = RunHealthStalled }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base()
			tc.change(&b[0])
			if got := SameFindings(base(), b); got != tc.same {
				t.Errorf("SameFindings = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestCarryOnsets(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	prev := []StateReason{
		{Code: "run.health.stalled", FirstSeen: unixtime.Of(t0)},
		{Code: "run.delivery.missing"}, // stored before findings were dated
	}
	cur := []StateReason{{Code: "run.health.stalled"}, {Code: "run.delivery.missing"}, {Code: "run.health.stale_lock"}}
	CarryOnsets(cur, prev, now)
	for i, want := range []time.Time{t0, {}, now} {
		if !cur[i].FirstSeen.Equal(want) {
			t.Errorf("%s first seen %v, want %v", cur[i].Code, cur[i].FirstSeen, want)
		}
	}
	// Gone and back: a new occurrence.
	back := []StateReason{{Code: "run.health.stalled"}}
	CarryOnsets(back, nil, now)
	if !back[0].FirstSeen.Equal(now) {
		t.Errorf("a finding back after clearing keeps an old onset: %v", back[0].FirstSeen)
	}
}
