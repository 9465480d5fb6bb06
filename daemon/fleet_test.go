package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"watchdog/leader"
	"watchdog/reaper"
)

// scriptedLock answers Try from a script, one step per call: the server
// as a follower and a leader see it.
type scriptedLock struct {
	steps []lockStep
	i     int
}

type lockStep struct {
	held, fresh bool
	err         error
}

func (s *scriptedLock) Try(context.Context) (bool, bool, error) {
	st := s.steps[s.i]
	s.i++
	return st.held, st.fresh, st.err
}

func (s *scriptedLock) Release(context.Context) error { return nil }

// TestAdvisoryLockSettles: a daemon that has just taken the lock does not
// lead until one Trust has passed (its predecessor may still trust its
// last proof that long); a hold gone with its connection is reported as
// lost, so the elector stops leading at once; an error while not holding
// is only an error.
func TestAdvisoryLockSettles(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	refused := errors.New("connection refused")
	steps := []struct {
		name    string
		step    lockStep
		advance time.Duration
		want    bool
		wantErr error // nil, leader.ErrLost or refused
	}{
		{name: "the server is down", step: lockStep{err: refused}, wantErr: refused},
		{name: "another holds the lock", step: lockStep{}},
		{name: "taken: settling", step: lockStep{held: true, fresh: true}},
		{name: "held, not yet a Trust later", step: lockStep{held: true}, advance: pgLeaderTrust - time.Millisecond},
		{name: "held a Trust later: leads", step: lockStep{held: true}, advance: time.Millisecond, want: true},
		{name: "held on", step: lockStep{held: true}, advance: pgLeaderEvery, want: true},
		{name: "its connection died", step: lockStep{err: refused}, wantErr: leader.ErrLost},
		{name: "taken again: settles again", step: lockStep{held: true, fresh: true}, advance: time.Hour},
		{name: "and leads after", step: lockStep{held: true}, advance: pgLeaderTrust, want: true},
	}
	s := &scriptedLock{}
	for _, st := range steps {
		s.steps = append(s.steps, st.step)
	}
	a := &advisoryLock{lock: s, settle: pgLeaderTrust, now: func() time.Time { return clock }}
	for _, st := range steps {
		clock = clock.Add(st.advance)
		got, err := a.TryLock(context.Background())
		if got != st.want {
			t.Errorf("%s: leads %v, want %v", st.name, got, st.want)
		}
		if !errors.Is(err, st.wantErr) || (err == nil) != (st.wantErr == nil) {
			t.Errorf("%s: error %v, want %v", st.name, err, st.wantErr)
		}
		if errors.Is(err, leader.ErrLost) != errors.Is(st.wantErr, leader.ErrLost) {
			t.Errorf("%s: lost %v", st.name, err)
		}
	}
}

// TestLoneDaemonWaitsForHostDeadlines: a lone daemon has no presence
// tick; it judges the silent hosts at their next deadline, and none is
// ahead once every host is lost or none is silent.
func TestLoneDaemonWaitsForHostDeadlines(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := reaper.Settings{HostDisconnectedAfter: time.Minute, HostLostAfter: time.Hour}
	slack := 10 * time.Millisecond
	cases := []struct {
		name string
		seen map[string]time.Time
		want time.Time
	}{
		{name: "none seen yet", seen: nil},
		{name: "only itself", seen: map[string]time.Time{"me": now.Add(-time.Hour)}},
		{name: "a host just gone: its disconnection", seen: map[string]time.Time{"me": now, "b": now.Add(-time.Second)}, want: now.Add(time.Minute - time.Second + slack)},
		{name: "a disconnected host: its loss", seen: map[string]time.Time{"b": now.Add(-2 * time.Minute)}, want: now.Add(time.Hour - 2*time.Minute + slack)},
		{name: "the nearest of two", seen: map[string]time.Time{"b": now.Add(-2 * time.Minute), "c": now.Add(-30 * time.Second)}, want: now.Add(30*time.Second + slack)},
		{name: "a lost host: nothing ahead", seen: map[string]time.Time{"b": now.Add(-2 * time.Hour)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fleet{self: "me"}
			if c.seen != nil {
				f.seen.Store(&c.seen)
			}
			if got := f.nextHostDeadline(s, now); !got.Equal(c.want) {
				t.Errorf("next deadline %v, want %v", got, c.want)
			}
		})
	}
}

// TestSoloCountsOnlyLiveHosts: hosts the presence reading holds as not
// alive (a lock not held) do not keep a daemon from being alone.
func TestSoloCountsOnlyLiveHosts(t *testing.T) {
	f := &fleet{self: "me", elector: leader.New(leader.Always{}, leader.Options{})}
	if f.solo() {
		t.Error("solo before any presence reading")
	}
	m := map[string]bool{"me": true, "gone": false}
	f.alive.Store(&m)
	if !f.solo() {
		t.Error("not solo beside a host that is not alive")
	}
	m2 := map[string]bool{"me": true, "b": true}
	f.alive.Store(&m2)
	if f.solo() {
		t.Error("solo beside a live host")
	}
}
