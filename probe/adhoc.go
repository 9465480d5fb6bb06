package probe

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"watchdog/internal/unixtime"
)

// AdHoc names a bare process as `watchdog probe --pid` is given it: each
// value as typed, "" when not given.
type AdHoc struct {
	PID, StartTime, Heartbeat string
	IdleAfter, StalledAfter   string
}

// Subject checks each value and returns what the probe needs; an error names
// the flag and says what it wants.
func (a AdHoc) Subject() (Subject, Thresholds, error) {
	var t Subject
	th := DefaultThresholds
	if a.PID == "" {
		return t, th, errors.New("--pid is required (or --entity TYPE/ID)")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(a.PID))
	if err != nil || pid <= 0 {
		return t, th, fmt.Errorf("--pid %q is not a process id (a positive integer)", a.PID)
	}
	t.PID = pid
	if a.StartTime != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(a.StartTime), 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return t, th, fmt.Errorf("--start-time %q is not a time in Unix seconds (e.g. 1716517000.12)", a.StartTime)
		}
		t.StartTime = unixtime.FromSeconds(v)
	}
	if a.Heartbeat == "" {
		t.NoHeartbeat = true
	} else {
		t.HeartbeatFile = a.Heartbeat
	}
	for _, d := range []struct {
		flag, value string
		into        *time.Duration
	}{
		{"--idle-after", a.IdleAfter, &th.IdleAfter},
		{"--stalled-after", a.StalledAfter, &th.StalledAfter},
	} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(strings.TrimSpace(d.value))
		if err != nil || v <= 0 {
			return t, th, fmt.Errorf("%s %q is not a positive duration (try 10m)", d.flag, d.value)
		}
		*d.into = v
	}
	if th.IdleAfter >= th.StalledAfter {
		return t, th, fmt.Errorf("--idle-after %v must be shorter than --stalled-after %v", th.IdleAfter, th.StalledAfter)
	}
	return t, th, nil
}
