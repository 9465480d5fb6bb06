package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"watchdog/leader"
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
